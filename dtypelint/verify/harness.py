"""Run a model module in a regime and check the dtype contracts (the seed of ``dtypelint verify``).

Regimes (as in the analysis):

- ``half``: built in fp32 on CPU, then ``.to(float16)`` (like ``.half()``); floating inputs in
  fp16; **real CPU kernels**, which raise the real dtype errors.
- ``loaded``: built with the default dtype set to fp16 (what ``from_pretrained(torch_dtype=
  float16)`` does), so explicit ``dtype=torch.float32`` choices and ``.float()`` calls in
  ``__init__`` stay fp32; submodules named in ``_keep_in_fp32_modules`` are then converted to
  fp32; floating inputs in fp16; **real CPU kernels**.
- ``autocast``: built in fp32, parameters and inputs re-created as **fake CUDA** tensors
  (fp32), run under CUDA autocast fp16; :class:`ContractMode` checks the sinks after autocast
  (fake kernels do not check dtypes), flash-attn / xformers are contract-checking stand-ins.

In every regime a run also records the dtypes that reached each sink and, for the named
submodules of ``HarnessSpec.module_outputs``, checks that they return the compute dtype (a
residual stream that silently became fp32: the lower-severity findings).

torch is imported only when a run starts: importing this module costs nothing.
"""

from __future__ import annotations

import importlib
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REGIMES = ("autocast", "half", "loaded")

DTYPE_ERROR = re.compile(
    r"dtype|scalar type|Half|BFloat16|Float\b|float\b|FlashAttention only support|same dtype|"
    r"without overflow|must share|should be the same", re.IGNORECASE)


@dataclass
class HarnessSpec:
    """How to build and call the module under test.

    ``inputs(torch)`` returns the positional inputs built in fp32 on CPU (the harness
    converts floating tensors to the regime's dtype and device); Python scalars pass as is.
    """

    factory: str  # name of the nn.Module class (or factory function) in the module
    init: Any = field(default_factory=dict)  # keyword arguments, or ``init(torch) -> dict`` (e.g. modules as arguments)
    inputs: Callable[[Any], tuple] = lambda torch: ()
    method: str = "forward"
    module_outputs: tuple[str, ...] = ()  # submodules that must return the compute dtype (half/loaded)
    compute_dtype: str = "float16"


@dataclass
class RunResult:
    regime: str
    ok: bool  # ran to the end and every contract held
    error: str | None = None  # the exception text (first line)
    error_type: str | None = None
    dtype_error: bool = False  # the failure is a dtype contract violation (not a harness problem)
    sinks: list = field(default_factory=list)  # SinkEvent records
    output_dtype: str | None = None
    module_dtypes: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        if self.ok:
            return f"{self.regime}: ok (output {self.output_dtype})"
        kind = "dtype error" if self.dtype_error else "harness error"
        return f"{self.regime}: {kind}: {self.error_type}: {self.error}"


@contextmanager
def imported(root: Path, module_name: str):
    """Import ``module_name`` from ``root`` freshly (no stale copy) and forget it afterwards."""
    top = module_name.split(".")[0]

    def purge():
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            del sys.modules[name]

    purge()
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield importlib.import_module(module_name)
    finally:
        try:
            sys.path.remove(str(root))
        except ValueError:
            pass
        purge()


def keep_in_fp32_names(model, compute_dtype: str = "float16") -> list[str]:
    """``_keep_in_fp32_modules`` (honoured when loading in fp16) and ``_keep_in_fp32_modules_strict``
    (fp16 and bf16) of the model's class, like transformers' ``from_pretrained``: a plain class
    attribute, so a subclass's list replaces its base's (an inherited list applies unchanged)."""
    names: list[str] = []
    if compute_dtype == "float16":
        names.extend(getattr(type(model), "_keep_in_fp32_modules", None) or [])
    names.extend(getattr(type(model), "_keep_in_fp32_modules_strict", None) or [])
    return list(dict.fromkeys(names))


def apply_keep_in_fp32(model, compute_dtype: str = "float16") -> None:
    """Like transformers' loading: submodules whose dotted name contains a kept name stay fp32."""
    import torch

    keep = keep_in_fp32_names(model, compute_dtype)
    if not keep:
        return
    for name, module in model.named_modules():
        if name and any(k in name.split(".") for k in keep):
            module.to(torch.float32)


def _convert_inputs(values, dtype, device="cpu"):
    import torch

    out = []
    for v in values:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            v = v.to(device=device, dtype=dtype)
        elif isinstance(v, torch.Tensor):
            v = v.to(device)
        out.append(v)
    return tuple(out)


def _init_kwargs(spec: HarnessSpec, torch) -> dict:
    return spec.init(torch) if callable(spec.init) else dict(spec.init)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if "\n" not in text or "Query/Key/Value" in text else text.splitlines()[0]


def run_regime(root: Path, module_name: str, spec: HarnessSpec, regime: str, seed: int = 0) -> RunResult:
    """Import ``module_name`` from ``root``, build it for ``regime``, run it, check the contracts."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from dtypelint.verify.contracts import ContractMode
    from dtypelint.verify.fakecuda import FakeIndexing, cuda_available, fake_input, to_fake_cuda
    from dtypelint.verify.stubs import stubs_installed

    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}")
    compute = getattr(torch, spec.compute_dtype)
    result = RunResult(regime=regime, ok=False)
    with stubs_installed() as stub_events, imported(root, module_name) as mod:
        factory = getattr(mod, spec.factory)
        torch.manual_seed(seed)
        try:
            if regime == "loaded":
                previous = torch.get_default_dtype()
                torch.set_default_dtype(compute)
                try:
                    model = factory(**_init_kwargs(spec, torch))
                finally:
                    torch.set_default_dtype(previous)
                apply_keep_in_fp32(model, spec.compute_dtype)
                inputs = _convert_inputs(spec.inputs(torch), compute)
            else:
                model = factory(**_init_kwargs(spec, torch))
                inputs = spec.inputs(torch)
                if regime == "half":
                    model = model.to(compute)
                    inputs = _convert_inputs(inputs, compute)
            model.eval()
        except Exception as exc:
            result.error, result.error_type = f"building the module failed: {_first_line(exc)}", type(exc).__name__
            return result

        hooks = []
        for name in spec.module_outputs:
            sub = model.get_submodule(name)

            def hook(_m, _inp, out, name=name):
                t = out[0] if isinstance(out, (tuple, list)) else out
                if isinstance(t, torch.Tensor):
                    result.module_dtypes[name] = str(t.dtype)
            hooks.append(sub.register_forward_hook(hook))

        contracts = ContractMode(enforce=(regime == "autocast"))
        try:
            with torch.no_grad():
                if regime == "autocast":
                    fake = FakeTensorMode(allow_non_fake_inputs=True)
                    to_fake_cuda(model, fake)
                    inputs = tuple(fake_input(v, fake) for v in inputs)
                    with fake, cuda_available(), FakeIndexing(), contracts:
                        torch.set_autocast_enabled("cuda", True)
                        torch.set_autocast_dtype("cuda", compute)
                        try:
                            out = getattr(model, spec.method)(*inputs)
                        finally:
                            torch.set_autocast_enabled("cuda", False)
                else:
                    with contracts:
                        out = getattr(model, spec.method)(*inputs)
        except Exception as exc:
            result.error, result.error_type = _first_line(exc), type(exc).__name__
            result.dtype_error = bool(DTYPE_ERROR.search(result.error)) or any(
                not e.ok for e in [*contracts.events, *stub_events])
            result.sinks = [*contracts.events, *stub_events]
            return result
        finally:
            for h in hooks:
                h.remove()
        result.sinks = [*contracts.events, *stub_events]
        t = out[0] if isinstance(out, (tuple, list)) else out
        result.output_dtype = str(t.dtype) if isinstance(t, torch.Tensor) else None
        if regime in ("half", "loaded"):
            wrong = {n: d for n, d in result.module_dtypes.items() if d != str(compute)}
            if wrong:
                result.error = "; ".join(f"`{n}` returned {d}, not the compute dtype {compute}" for n, d in wrong.items())
                result.error_type = "DtypeContract"
                result.dtype_error = True
                return result
        result.ok = True
        return result


def verify_file(path: Path, spec: HarnessSpec, regimes=REGIMES, root: Path | None = None) -> dict[str, RunResult]:
    """Run a file (a module under ``root``; default: its own folder) in each regime."""
    path = Path(path).resolve()
    root = (root or path.parent).resolve()
    rel = path.relative_to(root).with_suffix("")
    module_name = ".".join(rel.parts)
    return {r: run_regime(root, module_name, spec, r) for r in regimes}
