"""``dtypelint verify``: execute a flagged module to confirm a finding and its fix.

- :mod:`~dtypelint.verify.command`: the command (runs ``check``, plans one job per module, reports);
- :mod:`~dtypelint.verify.runner` / :mod:`~dtypelint.verify.child`: child processes with time and memory limits;
- :mod:`~dtypelint.verify.session`: per module, reproduce each finding in its regime, then run its fix;
- :mod:`~dtypelint.verify.targets`, :mod:`~dtypelint.verify.synthesis`, :mod:`~dtypelint.verify.inputs`,
  :mod:`~dtypelint.verify.sizes`: which class to build and how (harness synthesis);
- :mod:`~dtypelint.verify.harness` / :mod:`~dtypelint.verify.build`: build a module for a regime and run it;
  :mod:`~dtypelint.verify.fakecuda`, :mod:`~dtypelint.verify.contracts`, :mod:`~dtypelint.verify.stubs`,
  :mod:`~dtypelint.verify.tracing`: fake CUDA, sink contracts, kernel stand-ins, what the user's lines did;
- :mod:`~dtypelint.verify.overlay`: fixed copies imported under the original module names;
- :mod:`~dtypelint.verify.results` / :mod:`~dtypelint.verify.report`: the result model and its rendering.

It executes user code: only ``verify`` and the tests use it, never the linter.  torch is imported
lazily, when a run starts; importing this package costs nothing.
"""

from dtypelint.verify.harness import REGIMES, HarnessSpec, RunResult, RunSetup, run_regime, verify_file

__all__ = ["REGIMES", "HarnessSpec", "RunResult", "RunSetup", "run_regime", "verify_file"]
