"""Run a model module in a regime and check the dtype contracts.

Regimes (as in the analysis):

- ``half``: built in fp32, then ``.to(float16)`` (like ``.half()``); floating inputs in fp16;
  **real kernels** (CPU, or CUDA when asked), which raise the real dtype errors.
- ``loaded``: built the way ``from_pretrained(dtype=float16)`` builds it (see
  :mod:`dtypelint.verify.build`): explicit float32 choices and the keep lists stay fp32;
  floating inputs in fp16; **real kernels**.
- ``autocast``: built in fp32; on CPU the parameters and inputs are re-created as **fake
  CUDA** tensors and run under the real CUDA autocast kernels, with :class:`ContractMode`
  checking the sinks after autocast (fake kernels do not check dtypes); on a CUDA device,
  real autocast and real kernels.  flash-attn / xformers are contract-checking stand-ins
  unless a real one is usable (CUDA).
- ``float32``: built and run in fp32 on CPU (the reference, and the probe that picks shapes).

Inputs arrive in the compute dtype (the analysis' entry-point assumption).  A run records
the dtypes reaching each sink, the user's lines executed, the user frames of an exception or
a broken contract, and silent promotions on probed lines.

torch is imported only when a run starts: importing this module costs nothing.
"""

from __future__ import annotations

import copy
import importlib
import re
import sys
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REGIMES = ("autocast", "half", "loaded")
RUN_REGIMES = (*REGIMES, "float32")
DEVICE_ALIAS: dict[str, str] = {}  # tests run the CUDA code path on CPU tensors: {"cuda": "cpu"}

CPU_UNSUPPORTED = re.compile(r"not implemented for '(Half|BFloat16)'|Unsupported dtype (Half|BFloat16)|"
                             r"does not support (Half|half|BFloat16|bfloat16)")
DTYPE_ERROR = re.compile(
    r"dtype|scalar type|c10::Half|c10::BFloat16|\bHalf\b|\bBFloat16\b|FlashAttention only support|"
    r"without overflow|must share|should be the same|result type \w+ can't be cast|"
    r"to have the same type as tensor", re.IGNORECASE)


@dataclass
class HarnessSpec:
    """How to build and call the module under test.

    ``inputs(torch)`` returns the positional inputs and ``kwargs(torch)`` the keyword inputs, built
    in fp32 on CPU (the harness converts floating tensors to the regime's dtype and device);
    Python values pass as they are.  ``kind``: ``class`` (``factory`` names an ``nn.Module`` class
    of the module, built with ``init``), ``function`` (a function of the module, called with the
    inputs) or ``factory`` (``factory`` is ``"pkg.mod:make"``; ``make()`` returns the module and its
    inputs).  ``container``: in the ``loaded`` regime, build this class of the module (with
    ``container_init``) and take the ``factory`` submodule from it (its keep lists decide).
    """

    factory: str
    init: Any = field(default_factory=dict)  # keyword arguments, or ``init(torch) -> dict``
    inputs: Callable[[Any], tuple] = lambda torch: ()
    method: str = "forward"
    module_outputs: tuple[str, ...] = ()  # submodules that must return the compute dtype (half/loaded)
    compute_dtype: str = "float16"
    kwargs: Callable[[Any], dict] | None = None
    make_inputs: Callable[[Any], tuple[tuple, dict]] | None = None  # torch -> (args, kwargs); overrides both
    extra_kwargs: dict = field(default_factory=dict)  # added to the keyword inputs (flipped flags)
    kind: str = "class"
    container: str | None = None
    container_init: Any = field(default_factory=dict)
    loader: str = ""  # "transformers": the library's own loader for the loaded regime
    description: str = ""


@dataclass
class RunSetup:
    """Where and how a run happens, and what it records."""

    device: str = "cpu"  # "cpu" or "cuda"
    watch: tuple[str, ...] = ()  # files whose lines and frames are recorded
    probe: dict[str, set[int]] = field(default_factory=dict)  # lines where promotions are recorded
    patched: dict[str, tuple[str, str]] = field(default_factory=dict)  # overlay: original -> (copy, text)
    roots: tuple[Path, ...] = ()  # more sys.path entries (the project root for harness factories)
    purge: str = "package"  # forget the whole top-level package before importing ("module": only the module)
    reference: bool = False  # compare the output with an fp32 run of the same weights
    user_sinks: tuple = ()  # dtypelint.config.SinkSpec
    stand_ins: bool = True  # install the flash-attn / xformers stand-ins


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
    stage: str = "run"  # where it stopped: "import", "build" or "run"
    frames: tuple = ()  # the user's (file, line) frames of the exception, innermost first
    lines: dict = field(default_factory=dict)  # file -> lines executed
    promotions: list = field(default_factory=list)
    device: str = "cpu"  # "cpu", "cuda" or "fake-cuda"
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    nonfinite: bool = False  # the output holds NaN or inf
    kept_fp32: bool = False  # loaded regime: the module holds float32 parameters the loader kept
    cpu_unsupported: bool = False  # a CPU kernel lacks the low-precision dtype (not a hazard on a GPU)
    notes: list = field(default_factory=list)  # how the build departed from the plan (loader emulated)
    output: Any = field(default=None, repr=False)

    @property
    def violations(self) -> list:
        return [e for e in self.sinks if not e.ok]

    def summary(self) -> str:
        if self.ok:
            return f"{self.regime}: ok (output {self.output_dtype})"
        kind = "dtype error" if self.dtype_error else "harness error"
        return f"{self.regime}: {kind}: {self.error_type}: {self.error}"


_LOADED: dict[str, tuple] = {}  # module name -> the variant it was last imported as (reused while unchanged)
_TOUCHED: set[str] = set()
_ROOTS: dict[str, str] = {}  # top-level package -> the import root it was last imported from  # every file ever overlaid (its modules are forgotten when the variant changes)


def preload() -> None:
    """Import what every run needs (torch, its dispatch modes, fake tensors: seconds of imports) once,
    so that children forked afterwards start at once."""
    import torch  # noqa: F401
    import torch._dynamo  # noqa: F401 - imported lazily by the first torch-function mode otherwise
    from torch._subclasses import fake_tensor  # noqa: F401

    import dtypelint.verify.session  # noqa: F401


def _top_purge(top: str) -> None:
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        del sys.modules[name]


@contextmanager
def imported(root: Path, module_name: str):
    """Import ``module_name`` from ``root`` freshly (no stale copy) and forget it afterwards."""
    with _module_for(Path(root), module_name, RunSetup()) as mod:
        yield mod


@contextmanager
def _module_for(root: Path, module_name: str, setup: RunSetup):
    from dtypelint.verify.overlay import modules_from, project_imports, purge

    top = module_name.split(".")[0]
    fingerprint = (str(root), tuple(sorted((k, hash(t)) for k, (_, t) in setup.patched.items())))
    with project_imports([Path(root), *setup.roots], setup.patched):
        reuse = setup.purge == "module" and _LOADED.get(module_name) == fingerprint and module_name in sys.modules
        if not reuse:
            stale = [module_name, *modules_from([*_TOUCHED, *setup.patched, *(c for c, _ in setup.patched.values())])]
            purge(stale)
            _TOUCHED.update([*setup.patched, *(c for c, _ in setup.patched.values())])
            if setup.purge == "package" or _ROOTS.get(top, str(root)) != str(root):
                _top_purge(top)  # another tree with the same package names: nothing of the old one may stay
            _ROOTS[top] = str(root)
        try:
            module = importlib.import_module(module_name)
            _LOADED[module_name] = fingerprint
            yield module
        except BaseException:
            _LOADED.pop(module_name, None)
            raise
        finally:
            if setup.purge == "package":
                _top_purge(top)
                _LOADED.pop(module_name, None)


# keep-list helpers live in build.py; re-exported for callers of the first harness
def keep_in_fp32_names(model, compute_dtype: str = "float16") -> list[str]:
    from dtypelint.verify.build import keep_in_fp32_names as names

    return names(model, compute_dtype)


def apply_keep_in_fp32(model, compute_dtype: str = "float16") -> list[str]:
    from dtypelint.verify.build import apply_keep_in_fp32 as apply

    return apply(model, compute_dtype)


def _convert(value, dtype, device: str):
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            return value.to(device=device, dtype=dtype)
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(_convert(v, dtype, device) for v in value)
    if isinstance(value, list):
        return [_convert(v, dtype, device) for v in value]
    if isinstance(value, dict):
        return {k: _convert(v, dtype, device) for k, v in value.items()}
    return value


def _clone(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (tuple, list)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if "\n" not in text or "Query/Key/Value" in text else text.splitlines()[0]


def is_dtype_error(exc: BaseException, frames: tuple = ()) -> bool:
    """The exception is a dtype failure: its text says so, or a bare ``assert`` on a line about dtypes."""
    text = str(exc)
    if "NoneType" in text:
        return False
    if DTYPE_ERROR.search(text):
        return True
    if isinstance(exc, AssertionError) and frames:
        import linecache

        f, line = frames[0]
        return "dtype" in linecache.getline(f, line)
    return False


def first_float(out):
    """The first floating tensor of an output (tensor, tuple, dict, ``ModelOutput``)."""
    import torch

    if hasattr(out, "to_tuple") and callable(out.to_tuple):
        out = out.to_tuple()
    if isinstance(out, torch.Tensor):
        return out if out.is_floating_point() else None
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        for item in out:
            t = first_float(item)
            if t is not None:
                return t
    return None


def _output_dtype(out):
    import torch

    t = first_float(out)
    if t is not None:
        return str(t.dtype)
    if isinstance(out, torch.Tensor):
        return str(out.dtype)
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return str(out[0].dtype)
    return None


def _build(mod, spec: HarnessSpec, regime: str, compute, torch, notes: list | None = None):
    """(callable, args, kwargs, model) for the regime, on CPU."""
    from dtypelint.verify.build import build_class, finite_weights, submodule_of

    build_regime = "float32" if regime in ("float32", "autocast") else regime
    if spec.make_inputs is not None:
        args, kwargs = spec.make_inputs(torch)
        args, kwargs = tuple(args), dict(kwargs)
    else:
        args = tuple(spec.inputs(torch))
        kwargs = dict(spec.kwargs(torch)) if spec.kwargs else {}
    kwargs.update(spec.extra_kwargs)
    if spec.kind == "function":
        return getattr(mod, spec.factory), args, kwargs, None
    if spec.kind == "factory":
        module_path, _, name = spec.factory.partition(":")
        sys.modules.pop(module_path, None)  # fresh: it imports the module under test (original or fixed)
        make = getattr(importlib.import_module(module_path), name)
        if build_regime == "loaded":
            from dtypelint.verify.build import apply_keep_in_fp32, default_dtype

            with default_dtype(compute):
                made = make()
        else:
            made = make()
        model, args, kwargs = _unpack_made(made)
        if build_regime == "loaded":
            apply_keep_in_fp32(model, spec.compute_dtype)
        elif build_regime == "half":
            model = model.to(compute)
        finite_weights(model)
        return getattr(model, spec.method), args, kwargs, model
    cls = getattr(mod, spec.factory)
    init = spec.init(torch) if callable(spec.init) else dict(spec.init)
    if spec.container and build_regime == "loaded":
        outer_cls = getattr(mod, spec.container)
        outer_init = spec.container_init(torch) if callable(spec.container_init) else dict(spec.container_init)
        outer = build_class(outer_cls, outer_init, "loaded", compute, spec.loader, notes)
        model = submodule_of(outer, cls)
        if model is None:
            raise LookupError(f"{spec.container} holds no {spec.factory}")
    else:
        model = build_class(cls, init, build_regime, compute, spec.loader, notes)
    return getattr(model, spec.method), args, kwargs, model


def _unpack_made(made):
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise TypeError("a harness factory must return (module, inputs) or (module, args, kwargs)")
    model, rest = made[0], made[1:]
    if len(rest) == 2:
        return model, tuple(rest[0]), dict(rest[1])
    inputs = rest[0]
    if isinstance(inputs, dict):
        return model, (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return model, tuple(inputs), {}
    return model, (inputs,), {}


def _compare(out, ref) -> tuple[float | None, float | None, bool]:
    import torch

    a, b = first_float(out), first_float(ref)
    if a is None or b is None or a.shape != b.shape:
        return None, None, False
    a, b = a.detach().float().cpu(), b.detach().float().cpu()
    if not torch.isfinite(a).all():
        return None, None, True
    finite = torch.isfinite(b)
    if not finite.any():
        return None, None, False
    diff = (a - b).abs()[finite]
    scale = b.abs()[finite].max().item()
    abs_err = diff.max().item() if diff.numel() else 0.0
    return abs_err, (abs_err / scale if scale > 0 else None), False


def run_regime(root: Path, module_name: str, spec: HarnessSpec, regime: str, seed: int = 0,
               setup: RunSetup | None = None) -> RunResult:
    """Import ``module_name`` from ``root``, build it for ``regime``, run it, check the contracts."""
    import torch

    from dtypelint.verify.contracts import ContractMode
    from dtypelint.verify.stubs import stubs_installed, user_sinks_installed
    from dtypelint.verify.tracing import LineTracer, PromotionProbe, Watch

    if regime not in RUN_REGIMES:
        raise ValueError(f"unknown regime {regime!r}")
    setup = setup or RunSetup()
    device = DEVICE_ALIAS.get(setup.device, setup.device)
    compute = getattr(torch, spec.compute_dtype)
    placement = "fake-cuda" if (regime == "autocast" and setup.device == "cpu") else (
        "cpu" if regime == "float32" else setup.device)
    result = RunResult(regime=regime, ok=False, device=placement)
    watch = Watch(setup.watch)
    user_events: list = []
    with ExitStack() as stack:
        stub_events = stack.enter_context(stubs_installed(watch, placement, setup.stand_ins))
        try:
            mod = stack.enter_context(_module_for(Path(root), module_name, setup))
        except Exception as exc:
            result.stage, result.error_type = "import", type(exc).__name__
            result.error = f"importing {module_name} failed: {_first_line(exc)}"
            result.frames = watch.traceback_frames(exc.__traceback__)
            return result
        torch.manual_seed(seed)
        try:
            call, args, kwargs, model = _build(mod, spec, regime, compute, torch, result.notes)
            if model is not None:
                model.eval()
        except Exception as exc:
            result.stage, result.error_type = "build", type(exc).__name__
            result.error = f"building the module failed: {_first_line(exc)}"
            result.frames = watch.traceback_frames(exc.__traceback__)
            return result
        in_dtype = torch.float32 if regime == "float32" else compute
        if regime == "loaded" and model is not None:
            result.kept_fp32 = any(p.dtype == torch.float32 for p in model.parameters())
        reference = None
        if setup.reference and regime in ("half", "loaded") and model is not None:
            try:
                ref_model = copy.deepcopy(model).float()
                reference = (getattr(ref_model, spec.method), _convert(_clone(args), torch.float32, "cpu"),
                             _convert(_clone(kwargs), torch.float32, "cpu"))
            except Exception:
                reference = None

        hooks = []
        for name in spec.module_outputs:
            sub = model.get_submodule(name)

            def hook(_m, _inp, out, name=name):
                t = out[0] if isinstance(out, (tuple, list)) else out
                if isinstance(t, torch.Tensor):
                    result.module_dtypes[name] = str(t.dtype)
            hooks.append(sub.register_forward_hook(hook))

        contracts = ContractMode(enforce=(placement == "fake-cuda"), watch=watch)
        probe = PromotionProbe(watch, setup.probe) if setup.probe else nullcontext()
        tracer = LineTracer(watch) if setup.watch else None
        project_modules = [m for m in list(sys.modules.values())
                           if watch.key(getattr(m, "__file__", "") or "") is not None] if setup.user_sinks else []
        stack.enter_context(user_sinks_installed(setup.user_sinks, project_modules, user_events))
        try:
            with torch.no_grad():
                if placement == "fake-cuda":
                    out = _run_fake_cuda(model, call, args, kwargs, compute, contracts, probe, tracer)
                else:
                    if model is not None and device != "cpu":
                        model.to(device)
                    args, kwargs = _convert(args, in_dtype, device), _convert(kwargs, in_dtype, device)
                    autocast = torch.autocast(device, dtype=compute) if regime == "autocast" else nullcontext()
                    with autocast, contracts, probe, (tracer or nullcontext()):
                        out = call(*args, **kwargs)
        except Exception as exc:
            result.error, result.error_type = _first_line(exc), type(exc).__name__
            result.frames = watch.traceback_frames(exc.__traceback__)
            result.sinks = [*contracts.events, *stub_events, *user_events]
            result.cpu_unsupported = placement == "cpu" and bool(CPU_UNSUPPORTED.search(str(exc)))
            result.dtype_error = not result.cpu_unsupported and (is_dtype_error(exc, result.frames)
                                                                 or bool(result.violations))
            _finish_trace(result, tracer, probe)
            return result
        finally:
            for h in hooks:
                h.remove()
        result.sinks = [*contracts.events, *stub_events, *user_events]
        _finish_trace(result, tracer, probe)
        result.output_dtype = _output_dtype(out)
        if placement != "fake-cuda":
            result.output = out
        if regime in ("half", "loaded"):
            wrong = {n: d for n, d in result.module_dtypes.items() if d != str(compute)}
            if wrong:
                result.error = "; ".join(f"`{n}` returned {d}, not the compute dtype {compute}" for n, d in wrong.items())
                result.error_type = "DtypeContract"
                result.dtype_error = True
                return result
        if reference is not None:
            try:
                with torch.no_grad():
                    ref_call, ref_args, ref_kwargs = reference
                    ref_out = ref_call(*ref_args, **ref_kwargs)
                result.max_abs_err, result.max_rel_err, result.nonfinite = _compare(out, ref_out)
            except Exception:
                pass
        result.ok = not (placement == "fake-cuda" and result.violations)
        return result


def _finish_trace(result: RunResult, tracer, probe) -> None:
    if tracer is not None:
        result.lines = tracer.hits
    if hasattr(probe, "events"):
        result.promotions = list(probe.events)


def _run_fake_cuda(model, call, args, kwargs, compute, contracts, probe, tracer):
    """Autocast on fake CUDA tensors (fact sheet §0): real autocast kernels, contracts checked here."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from dtypelint.verify.fakecuda import FakeIndexing, cuda_available, to_fake_cuda

    fake = FakeTensorMode(allow_non_fake_inputs=True)
    if model is not None:
        to_fake_cuda(model, fake)
    args = tuple(_fake_tree(v, fake, compute) for v in args)
    kwargs = {k: _fake_tree(v, fake, compute) for k, v in kwargs.items()}
    with fake, cuda_available(), FakeIndexing(), contracts, probe, (tracer or nullcontext()):
        torch.set_autocast_enabled("cuda", True)
        torch.set_autocast_dtype("cuda", compute)
        try:
            return call(*args, **kwargs)
        finally:
            torch.set_autocast_enabled("cuda", False)


def _fake_tree(value, fake, compute):
    from dtypelint.verify.fakecuda import fake_input

    if isinstance(value, tuple):
        return tuple(_fake_tree(v, fake, compute) for v in value)
    if isinstance(value, list):
        return [_fake_tree(v, fake, compute) for v in value]
    if isinstance(value, dict):
        return {k: _fake_tree(v, fake, compute) for k, v in value.items()}
    return fake_input(value, fake, compute)


def verify_file(path: Path, spec: HarnessSpec, regimes=REGIMES, root: Path | None = None) -> dict[str, RunResult]:
    """Run a file (a module under ``root``; default: its own folder) in each regime."""
    path = Path(path).resolve()
    root = (root or path.parent).resolve()
    rel = path.relative_to(root).with_suffix("")
    module_name = ".".join(rel.parts)
    return {r: run_regime(root, module_name, spec, r) for r in regimes}
