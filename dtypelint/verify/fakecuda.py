"""Fake CUDA on the CPU build of torch (fact sheet §0).

A ``FakeTensorMode`` tensor on ``device="cuda"`` carries the CUDA dispatch keys, so
CUDA autocast runs its real kernels and the output dtypes are what a GPU gives.
Two gaps of the CPU build are bridged here:

- Python indexing (``x[:, None]``, ``x[idx] = v``) goes through a device guard that
  the CPU build lacks; :class:`FakeIndexing` re-expresses ``__getitem__`` and
  ``__setitem__`` with ATen ops (select/slice/unsqueeze/index/index_put_/copy_).
- ``torch.autocast("cuda")`` disables itself when ``torch.cuda.is_available()`` is
  False; :func:`cuda_available` patches it while the model runs.
"""

from __future__ import annotations

from contextlib import contextmanager
from unittest import mock

import torch
from torch.overrides import TorchFunctionMode

aten = torch.ops.aten


def _as_tuple(idx):
    return idx if isinstance(idx, tuple) else (idx,)


def _is_tensor_index(i) -> bool:
    return isinstance(i, torch.Tensor) or (isinstance(i, (list, tuple)) and not isinstance(i, str))


def _consumed(i) -> int:
    if i is None or i is Ellipsis:
        return 0
    if isinstance(i, torch.Tensor) and i.dtype == torch.bool:
        return i.dim()
    return 1


def _index_parts(x: torch.Tensor, idx):
    """Basic indexing applied with ATen ops; returns (view, advanced indices by dim or None)."""
    idx = _as_tuple(idx)
    used = sum(_consumed(i) for i in idx)
    out = x
    dim = 0
    adv: dict[int, torch.Tensor] = {}
    for i in idx:
        if i is Ellipsis:
            dim += x.dim() - used
        elif i is None:
            out = aten.unsqueeze.default(out, dim)
            dim += 1
        elif isinstance(i, bool):
            raise NotImplementedError("boolean scalar index on fake CUDA tensors")
        elif isinstance(i, int):
            out = aten.select.int(out, dim, i)
        elif isinstance(i, slice):
            step = 1 if i.step is None else i.step
            out = aten.slice.Tensor(out, dim, i.start, i.stop, step)
            dim += 1
        elif _is_tensor_index(i):
            t = i if isinstance(i, torch.Tensor) else torch.tensor(i)
            if t.device != out.device:
                t = t.to(out.device)
            adv[dim] = t
            dim += t.dim() if t.dtype == torch.bool else 1
        else:
            raise NotImplementedError(f"index {i!r} on fake CUDA tensors")
    return out, adv


def getitem(x: torch.Tensor, idx):
    out, adv = _index_parts(x, idx)
    if adv:
        out = aten.index.Tensor(out, [adv.get(d) for d in range(max(adv) + 1)])
    return out


def setitem(x: torch.Tensor, idx, value) -> None:
    view, adv = _index_parts(x, idx)
    if not isinstance(value, torch.Tensor):
        value = torch.tensor(value, dtype=x.dtype, device=x.device)
    elif value.device != x.device and value.dim() == 0:
        value = value.to(x.device)
    if adv:
        # Like CUDA: advanced assignment is index_put_, which requires equal dtypes.
        aten.index_put_.default(view, [adv.get(d) for d in range(max(adv) + 1)], value)
    else:
        aten.copy_.default(view, value)  # basic assignment: copy_ (silently casts)


class FakeIndexing(TorchFunctionMode):
    """Route tensor indexing through ATen ops (works on fake CUDA tensors)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.__getitem__:
            return getitem(args[0], args[1])
        if func is torch.Tensor.__setitem__:
            return setitem(args[0], args[1], args[2])
        return func(*args, **kwargs)


@contextmanager
def cuda_available():
    with mock.patch("torch.cuda.is_available", return_value=True):
        yield


def to_fake_cuda(model: torch.nn.Module, fake_mode) -> None:
    """Re-create every parameter and buffer as a fake CUDA tensor (same dtype, no grad)."""
    with fake_mode:
        for module in model.modules():
            for name, p in list(module._parameters.items()):
                if p is not None:
                    module._parameters[name] = torch.nn.Parameter(
                        torch.empty(p.shape, dtype=p.dtype, device="cuda"), requires_grad=False)
            for name, b in list(module._buffers.items()):
                if b is not None:
                    module._buffers[name] = torch.empty(b.shape, dtype=b.dtype, device="cuda")


def fake_input(value, fake_mode, dtype=None):
    """A fake CUDA copy of an input (floating tensors get ``dtype`` when given)."""
    if not isinstance(value, torch.Tensor):
        return value
    with fake_mode:
        dt = dtype if (dtype is not None and value.is_floating_point()) else value.dtype
        return torch.zeros(value.shape, dtype=dt, device="cuda")
