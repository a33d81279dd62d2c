"""Execute a flagged module in the regime a finding names, before and after its fix.

The seed of ``dtypelint verify``: :func:`run_regime` builds a module for the
``half`` / ``loaded`` regimes on real CPU kernels and for ``autocast`` on fake CUDA
tensors (real CUDA autocast kernels, dtype contracts checked by
:class:`dtypelint.verify.contracts.ContractMode`, flash-attn and xformers replaced by
contract-checking stand-ins), and reports whether it ran and which dtypes reached
each sink.  It executes user code: only ``verify`` and the tests use it, never the
linter.  torch is imported lazily, when a run starts.
"""

from dtypelint.verify.harness import REGIMES, HarnessSpec, RunResult, run_regime, verify_file

__all__ = ["REGIMES", "HarnessSpec", "RunResult", "run_regime", "verify_file"]
