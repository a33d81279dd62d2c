"""Dtype contracts of the sinks, checked at the ATen level while a module runs.

Fake CUDA tensors run the real autocast kernels (so dtypes are what a GPU would
produce) but their meta kernels rarely check dtypes.  :class:`ContractMode` is a
``TorchDispatchMode`` that sees every ATen call *after* autocast has cast its
arguments, records the dtypes reaching each sink, and raises the error the CUDA
kernel would raise (texts from the fact sheet §3) when a contract is broken.
Under real CPU kernels it only records (the kernels raise by themselves).

torch is imported by the caller; this module must only be imported when torch is.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

aten = torch.ops.aten

_NAMES = {torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16", torch.float32: "float", torch.float64: "double"}
_SHORT = {torch.float16: "Half", torch.bfloat16: "BFloat16", torch.float32: "Float", torch.float64: "Double"}


def cname(dt) -> str:
    return _NAMES.get(dt, str(dt))


def sname(dt) -> str:
    return _SHORT.get(dt, str(dt))


@dataclass(frozen=True)
class SinkEvent:
    """One call of a dtype-strict op: which op, the floating dtypes it received, and whether it was legal."""

    op: str
    dtypes: tuple[str, ...]
    ok: bool
    message: str = ""
    where: tuple[tuple[str, int], ...] = ()  # the user's (file, line) frames at the call, innermost first


def _packets(*ops):
    out = set()
    for op in ops:
        packet = getattr(aten, op, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            out.add(getattr(packet, overload))
    return out


MATMUL = _packets("mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "dot", "addmv", "addr")
CONV = _packets("convolution", "_convolution", "cudnn_convolution")
SDPA = _packets("_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
                "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math")
SELF_SOURCE = {  # op packet -> (name for the message, index of the source argument)
    **{p: ("index_put", 2) for p in _packets("index_put", "index_put_", "_index_put_impl_", "_unsafe_index_put")},
    **{p: ("index_copy", 3) for p in _packets("index_copy", "index_copy_")},
    **{p: ("index_add", 3) for p in _packets("index_add", "index_add_")},
    **{p: ("scatter", 3) for p in _packets("scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
                                          "scatter_reduce_")},
    **{p: ("masked_scatter", 2) for p in _packets("masked_scatter", "masked_scatter_")},
    **{p: ("lerp", 1) for p in _packets("lerp", "lerp_")},
}
SCALAR_FILL = _packets("masked_fill", "masked_fill_", "fill", "fill_", "full", "clamp", "clamp_", "clamp_min",
                       "clamp_max", "clamp_min_", "clamp_max_")


def _floats(values) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor) and v.is_floating_point()]


def _mixed_devices(values) -> bool:
    """Tensors (dim >= 1) on different devices: a device error on a GPU, not a dtype contract."""
    kinds = {v.device.type for v in tree_leaves(values) if isinstance(v, torch.Tensor) and v.dim() > 0}
    return len(kinds) > 1


def check_call(func, args, kwargs) -> SinkEvent | None:
    """The contract event of one ATen call, or None when ``func`` is not a sink."""
    name = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") else str(func)
    if _mixed_devices((args, kwargs)):
        return None
    if func in MATMUL or func in CONV or func in SDPA:
        ts = _floats(tree_leaves((args[:3], {k: v for k, v in kwargs.items() if k in ("input", "weight", "bias")})))
        if func in SDPA:
            ts = _floats(args[:3])
        dts = tuple(t.dtype for t in ts)
        if len(set(dts)) > 1:
            a, b = dts[0], next(d for d in dts if d != dts[0])
            if func in SDPA:
                q, k, v = (t.dtype for t in ts[:3])
                msg = (f"Expected query, key, and value to have the same dtype, but got query.dtype: {cname(q)} "
                       f"key.dtype: {cname(k)} and value.dtype: {cname(v)} instead.")
            elif func in CONV:
                msg = f"Input type ({cname(a)}) and weight type ({cname(b)}) should be the same"
            elif name in ("bmm", "baddbmm", "addbmm"):
                msg = f"expected scalar type {sname(a)} but found {sname(b)}"
            else:
                msg = f"expected mat1 and mat2 to have the same dtype, but got: {cname(a)} != {cname(b)}"
            return SinkEvent(name, tuple(map(str, dts)), False, msg)
        return SinkEvent(name, tuple(map(str, dts)), True)
    if func in SELF_SOURCE:
        what, idx = SELF_SOURCE[func]
        self_t = args[0] if args else kwargs.get("self")
        src = args[idx] if len(args) > idx else kwargs.get({"index_put": "values", "lerp": "end"}.get(what, "source"),
                                                            kwargs.get("src"))
        if not isinstance(self_t, torch.Tensor) or not isinstance(src, torch.Tensor):
            return None
        if not (self_t.is_floating_point() or src.is_floating_point()):
            return None
        dts = (str(self_t.dtype), str(src.dtype))
        if self_t.dtype == src.dtype:
            return SinkEvent(what, dts, True)
        d, s = self_t.dtype, src.dtype
        msg = {
            "index_put": f"Index put requires the source and destination dtypes match, got {sname(d)} for the "
                         f"destination and {sname(s)} for the source.",
            "index_copy": f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                          f"{sname(d)} and (source) {sname(s)}",
            "index_add": f"index_add_(): self ({sname(d)}) and source ({sname(s)}) must have the same scalar type",
            "scatter": "scatter(): Expected self.dtype to be equal to src.dtype",
            "masked_scatter": f"masked_scatter: expected self and source to have same dtypes but got{sname(d)} and {sname(s)}",
            "lerp": f"expected dtype {cname(d)} for `end` but got dtype {cname(s)}",
        }[what]
        return SinkEvent(what, dts, False, msg)
    if func in SCALAR_FILL:
        target = args[0] if args and isinstance(args[0], torch.Tensor) else None
        dtype = kwargs.get("dtype") or (target.dtype if target is not None else None)
        if dtype not in (torch.float16, torch.bfloat16):
            return None
        scalars = [a for a in list(args[1:]) + list(kwargs.values()) if isinstance(a, (int, float)) and not isinstance(a, bool)]
        limit = torch.finfo(dtype).max
        for value in scalars:
            if value == value and abs(value) != float("inf") and abs(value) > limit:
                return SinkEvent(name, (str(dtype),), False,
                                 f"value cannot be converted to type {cname(dtype)} without overflow")
        return None
    return None


class ContractMode(TorchDispatchMode):
    """Record the dtypes reaching dtype-strict ops; raise on a broken contract when ``enforce``.

    ``watch`` (a :class:`dtypelint.verify.tracing.Watch`) ties each broken contract to the
    user's source lines on the stack.
    """

    def __init__(self, enforce: bool, watch=None):
        super().__init__()
        self.enforce = enforce
        self.watch = watch
        self.events: list[SinkEvent] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            event = check_call(func, args, kwargs)
        except Exception:  # a checker bug must not mask the real behaviour
            event = None
        if event is not None:
            if not event.ok and self.watch is not None:
                event = SinkEvent(event.op, event.dtypes, event.ok, event.message, self.watch.stack())
            self.events.append(event)
            if not event.ok and self.enforce:
                raise RuntimeError(event.message)
        return func(*args, **kwargs)


def check_user_sink(name: str, contract: str, values: dict) -> SinkEvent:
    """The contract of a sink declared in ``[tool.dtypelint.sinks]``, on its named arguments."""
    ts = {k: v for k, v in values.items() if isinstance(v, torch.Tensor) and v.is_floating_point()}
    dts = tuple(str(t.dtype) for t in ts.values())
    if contract == "half-only":
        wide = [k for k, t in ts.items() if t.dtype not in (torch.float16, torch.bfloat16)]
        if wide:
            return SinkEvent(name, dts, False, f"{name} accepts only float16/bfloat16 inputs, got "
                             + ", ".join(f"{k}: {ts[k].dtype}" for k in wide))
    if len({t.dtype for t in ts.values()}) > 1:
        return SinkEvent(name, dts, False, f"{name} requires equal dtypes, got "
                         + ", ".join(f"{k}: {t.dtype}" for k, t in ts.items()))
    return SinkEvent(name, dts, True)
