"""Contract-checking stand-ins for fused attention kernels that a CPU machine lacks.

``flash_attn`` and ``xformers.ops`` are installed into ``sys.modules`` while a
module is imported and run.  Each entry point checks the dtype contract of the
real kernel (fact sheet §4.1, §4.3) with the real error text, records the call,
and returns a tensor of the right shape, dtype and device.  They are custom ops
without autocast registration in the real packages, so they see the dtypes the
Python code passes, exactly as here.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import inspect
import sys
import types
from contextlib import contextmanager

import torch

from dtypelint.verify.contracts import SinkEvent, check_user_sink

EVENTS: list[SinkEvent] = []
_WATCH = [None]  # the run's tracing.Watch, to tie broken contracts to the user's lines


def _where():
    watch = _WATCH[0]
    return watch.stack() if watch is not None else ()


def _flash_check(name, q, k, v):
    dts = (str(q.dtype), str(k.dtype), str(v.dtype))
    if q.dtype not in (torch.float16, torch.bfloat16):
        msg = "FlashAttention only support fp16 and bf16 data type"
    elif k.dtype != q.dtype:
        msg = "query and key must have the same dtype"
    elif v.dtype != q.dtype:
        msg = "query and value must have the same dtype"
    else:
        EVENTS.append(SinkEvent(name, dts, True))
        return
    EVENTS.append(SinkEvent(name, dts, False, msg, _where()))
    raise RuntimeError(msg)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, *args, **kwargs):
    _flash_check("flash_attn_func", q, k, v)
    return torch.empty((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)


def flash_attn_varlen_func(q, k, v, *args, **kwargs):
    _flash_check("flash_attn_varlen_func", q, k, v)
    return torch.empty((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)


def flash_attn_qkvpacked_func(qkv, *args, **kwargs):
    q, k, v = qkv.unbind(dim=2)
    _flash_check("flash_attn_qkvpacked_func", q, k, v)
    return torch.empty(q.shape, dtype=q.dtype, device=q.device)


def flash_attn_kvpacked_func(q, kv, *args, **kwargs):
    k, v = kv.unbind(dim=2)
    _flash_check("flash_attn_kvpacked_func", q, k, v)
    return torch.empty((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)


def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None, *args, **kwargs):
    dts = (str(query.dtype), str(key.dtype), str(value.dtype))
    if not (query.dtype == key.dtype == value.dtype):
        msg = ("Query/Key/Value should all have the same dtype\n"
               f"  query.dtype: {query.dtype}\n  key.dtype  : {key.dtype}\n  value.dtype: {value.dtype}")
        EVENTS.append(SinkEvent("memory_efficient_attention", dts, False, msg, _where()))
        raise ValueError(msg)
    EVENTS.append(SinkEvent("memory_efficient_attention", dts, True))
    return torch.empty((*query.shape[:-1], value.shape[-1]), dtype=query.dtype, device=query.device)


def _equal_inputs(name: str, **tensors) -> None:
    """Fused norm / rotary kernels read every input with the input's dtype: mixed dtypes raise."""
    present = {k: t for k, t in tensors.items() if isinstance(t, torch.Tensor)}
    first = next(iter(present.values()))
    dts = tuple(str(t.dtype) for t in present.values())
    odd = next((k for k, t in present.items() if t.dtype != first.dtype), None)
    if odd is None:
        EVENTS.append(SinkEvent(name, dts, True))
        return
    short = {torch.float16: "Half", torch.bfloat16: "BFloat16", torch.float32: "Float", torch.float64: "Double"}
    msg = f"expected scalar type {short.get(first.dtype, first.dtype)} but found {short.get(present[odd].dtype)}" \
          f" ({name}: `{odd}`)"
    EVENTS.append(SinkEvent(name, dts, False, msg, _where()))
    raise RuntimeError(msg)


def _rms(x, weight, eps):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y * weight if weight is not None else y


def rms_norm(x, weight, epsilon=1e-6, *args, **kwargs):
    _equal_inputs("rms_norm", x=x, weight=weight)
    return _rms(x, weight, epsilon)


def layer_norm(x, weight, bias=None, epsilon=1e-5, *args, **kwargs):
    _equal_inputs("layer_norm", x=x, weight=weight, bias=bias)
    return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, epsilon)


def rms_norm_fn(x, weight, bias=None, *args, eps=1e-6, **kwargs):
    _equal_inputs("rms_norm_fn", x=x, weight=weight, bias=bias)
    out = _rms(x, weight, eps)
    return out + bias if bias is not None else out


def layer_norm_fn(x, weight, bias=None, *args, eps=1e-5, **kwargs):
    _equal_inputs("layer_norm_fn", x=x, weight=weight, bias=bias)
    return torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps)


def fused_rms_norm_affine(input, weight, normalized_shape=None, eps=1e-6, *args, **kwargs):
    _equal_inputs("fused_rms_norm_affine", x=input, weight=weight)
    return _rms(input, weight, eps)


def fused_layer_norm_affine(input, weight, bias=None, normalized_shape=None, eps=1e-5, *args, **kwargs):
    _equal_inputs("fused_layer_norm_affine", x=input, weight=weight, bias=bias)
    return torch.nn.functional.layer_norm(input, input.shape[-1:], weight, bias, eps)


def apply_rotary_emb(x, cos, sin, *args, **kwargs):
    """The rotation itself is left out (shapes vary between wrappers): the dtype contract is what is checked."""
    _equal_inputs("apply_rotary_emb", x=x, cos=cos, sin=sin)
    return x.clone()


def _module(name: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None, origin="dtypelint verify stand-in")
    mod.__dtypelint_stub__ = True
    return mod


def _modules() -> dict[str, types.ModuleType]:
    fa = _module("flash_attn")
    fa.__dtypelint_stub__ = True
    for fn in (flash_attn_func, flash_attn_varlen_func, flash_attn_qkvpacked_func, flash_attn_kvpacked_func):
        setattr(fa, fn.__name__, fn)
    fai = _module("flash_attn.flash_attn_interface")
    for fn in (flash_attn_func, flash_attn_varlen_func, flash_attn_qkvpacked_func, flash_attn_kvpacked_func):
        setattr(fai, fn.__name__, fn)
    fa.flash_attn_interface = fai
    xf = _module("xformers")
    xf.__dtypelint_stub__ = True
    ops = _module("xformers.ops")
    ops.memory_efficient_attention = memory_efficient_attention
    xf.ops = ops
    out = {"flash_attn": fa, "flash_attn.flash_attn_interface": fai, "xformers": xf, "xformers.ops": ops}
    fused = {  # module -> entry points (fused norm and rotary kernels)
        "flash_attn.ops.rms_norm": {"rms_norm": rms_norm},
        "flash_attn.ops.layer_norm": {"layer_norm": layer_norm},
        "flash_attn.ops.triton.layer_norm": {"rms_norm_fn": rms_norm_fn, "layer_norm_fn": layer_norm_fn},
        "flash_attn.ops.triton.rotary": {"apply_rotary": apply_rotary_emb},
        "flash_attn.layers.rotary": {"apply_rotary_emb": apply_rotary_emb, "apply_rotary_emb_func": apply_rotary_emb},
        "apex.normalization.fused_layer_norm": {"fused_rms_norm_affine": fused_rms_norm_affine,
                                                "fused_layer_norm_affine": fused_layer_norm_affine},
    }
    for name, entries in fused.items():
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # the parent packages, linked by attribute
            pkg = ".".join(parts[:i])
            if pkg not in out:
                out[pkg] = _module(pkg)
            if i > 1:
                setattr(out[".".join(parts[:i - 1])], parts[i - 1], out[pkg])
        for attr, fn in entries.items():
            setattr(out[name], attr, fn)
    return out


def real_package_usable(name: str, device: str) -> bool:
    """A real flash-attn / xformers is used only on a CUDA device, and only when it imports."""
    if device != "cuda":
        return False
    try:
        mod = importlib.import_module(name)
    except Exception:
        return False
    return not getattr(mod, "__dtypelint_stub__", False)


@contextmanager
def stubs_installed(watch=None, device: str = "cpu", enabled: bool = True):
    """Install the stand-ins in ``sys.modules`` for the duration (on CUDA, an installed real
    flash-attn / xformers is kept: its own checks raise).  ``enabled=False`` installs none (the
    project does not use these kernels: a library probing for them must not find stand-ins)."""
    stand_ins = {name: mod for name, mod in _modules().items()
                 if enabled and not real_package_usable(name.split(".")[0], device)}
    saved = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    EVENTS.clear()
    _WATCH[0] = watch
    try:
        yield EVENTS
    finally:
        _WATCH[0] = None
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod


def _checked(fn, name: str, contract: str, args_names: tuple[str, ...], positions: tuple[int, ...], events: list):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        values = {}
        bound = None
        if sig is not None:
            try:
                bound = sig.bind_partial(*args, **kwargs).arguments
            except TypeError:
                bound = None
        for arg, pos in zip(args_names, positions):
            if bound is not None and arg in bound:
                values[arg] = bound[arg]
            elif arg in kwargs:
                values[arg] = kwargs[arg]
            elif pos < len(args):
                values[arg] = args[pos]
        event = check_user_sink(name, contract, values)
        if not event.ok:
            event = SinkEvent(event.op, event.dtypes, False, event.message, _where())
            events.append(event)
            raise RuntimeError(event.message)
        events.append(event)
        return fn(*args, **kwargs)

    wrapper.__dtypelint_sink__ = fn
    return wrapper


@contextmanager
def user_sinks_installed(sinks, modules, events: list):
    """Wrap each sink declared in ``[tool.dtypelint.sinks]`` (``SinkSpec``) with its contract check,
    where it is defined and wherever ``modules`` (the project's imported modules) hold it."""
    undo: list[tuple[object, str, object]] = []
    for spec in sinks:
        modname, _, attr = spec.name.rpartition(".")
        try:
            owner = importlib.import_module(modname) if modname else None
        except Exception:
            owner = None
        original = getattr(owner, attr, None) if owner is not None else None
        if original is None:
            original = next((getattr(m, attr) for m in modules if getattr(m, attr, None) is not None
                             and getattr(getattr(m, attr), "__module__", "") == modname), None)
        if original is None or not callable(original):
            continue
        wrapped = _checked(original, spec.name, spec.contract, spec.args, spec.positions, events)
        for holder in [owner, *modules]:
            if holder is None:
                continue
            for key, value in list(vars(holder).items()):
                if value is original:
                    undo.append((holder, key, value))
                    setattr(holder, key, wrapped)
    try:
        yield
    finally:
        for holder, key, value in reversed(undo):
            setattr(holder, key, value)
