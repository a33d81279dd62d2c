"""Contract-checking stand-ins for fused attention kernels that a CPU machine lacks.

``flash_attn`` and ``xformers.ops`` are installed into ``sys.modules`` while a
module is imported and run.  Each entry point checks the dtype contract of the
real kernel (fact sheet §4.1, §4.3) with the real error text, records the call,
and returns a tensor of the right shape, dtype and device.  They are custom ops
without autocast registration in the real packages, so they see the dtypes the
Python code passes, exactly as here.
"""

from __future__ import annotations

import sys
import types
from contextlib import contextmanager

import torch

from dtypelint.verify.contracts import SinkEvent

EVENTS: list[SinkEvent] = []


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
    EVENTS.append(SinkEvent(name, dts, False, msg))
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
        EVENTS.append(SinkEvent("memory_efficient_attention", dts, False, msg))
        raise ValueError(msg)
    EVENTS.append(SinkEvent("memory_efficient_attention", dts, True))
    return torch.empty((*query.shape[:-1], value.shape[-1]), dtype=query.dtype, device=query.device)


def _modules() -> dict[str, types.ModuleType]:
    fa = types.ModuleType("flash_attn")
    fa.__dtypelint_stub__ = True
    for fn in (flash_attn_func, flash_attn_varlen_func, flash_attn_qkvpacked_func, flash_attn_kvpacked_func):
        setattr(fa, fn.__name__, fn)
    fai = types.ModuleType("flash_attn.flash_attn_interface")
    for fn in (flash_attn_func, flash_attn_varlen_func, flash_attn_qkvpacked_func, flash_attn_kvpacked_func):
        setattr(fai, fn.__name__, fn)
    fa.flash_attn_interface = fai
    xf = types.ModuleType("xformers")
    xf.__dtypelint_stub__ = True
    ops = types.ModuleType("xformers.ops")
    ops.memory_efficient_attention = memory_efficient_attention
    xf.ops = ops
    return {"flash_attn": fa, "flash_attn.flash_attn_interface": fai, "xformers": xf, "xformers.ops": ops}


@contextmanager
def stubs_installed():
    """Install the stand-ins in ``sys.modules`` (replacing any real package) for the duration."""
    saved = {name: sys.modules.get(name) for name in _modules()}
    sys.modules.update(_modules())
    EVENTS.clear()
    try:
        yield EVENTS
    finally:
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod
