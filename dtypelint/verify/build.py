"""Build a module the way each regime builds it.

- ``float32``: as constructed (the reference, and the probe that picks input shapes);
- ``half``: constructed in float32, then ``.to(compute dtype)`` (what ``.half()`` does);
- ``loaded``: constructed with the compute dtype as the default dtype (so explicit
  ``dtype=torch.float32`` and ``.float()`` choices stay float32) and the keep lists
  applied like ``from_pretrained``; a ``transformers`` model goes through the library's
  own ``save_pretrained`` / ``from_pretrained(dtype=...)`` instead, because its loader's
  rules decide what stays float32;
- ``autocast``: constructed in float32 (the caller moves it to (fake) CUDA).

When the keep lists live on a model that contains the flagged module, that model is
built and the flagged module taken from it.
"""

from __future__ import annotations

import re
import tempfile
from contextlib import contextmanager

import torch


def keep_in_fp32_names(model, compute_dtype: str = "float16") -> list[str]:
    """``_keep_in_fp32_modules`` (honoured when loading in fp16) and ``_keep_in_fp32_modules_strict``
    (fp16 and bf16), from the class and its bases, like transformers' ``from_pretrained``."""
    names: list[str] = []
    cls = model if isinstance(model, type) else type(model)
    for klass in cls.__mro__:
        if compute_dtype == "float16":
            names.extend(klass.__dict__.get("_keep_in_fp32_modules") or [])
        names.extend(klass.__dict__.get("_keep_in_fp32_modules_strict") or [])
    return list(dict.fromkeys(names))


def keep_pattern(names: list[str]) -> re.Pattern | None:
    """transformers 5 matching: each entry a glob (``*`` -> ``.*``), searched (unanchored) in parameter names."""
    if not names:
        return None
    return re.compile("|".join(f"(?:{re.escape(n).replace(chr(92) + '*', '.*')})" for n in names))


def apply_keep_in_fp32(model, compute_dtype: str = "float16") -> list[str]:
    """Turn the parameters and buffers that the keep lists name back to float32; returns their names."""
    pattern = keep_pattern(keep_in_fp32_names(model, compute_dtype))
    if pattern is None:
        return []
    kept = []
    for module_name, module in model.named_modules():
        prefix = f"{module_name}." if module_name else ""
        for name, p in list(module._parameters.items()):
            if p is not None and p.is_floating_point() and pattern.search(prefix + name):
                p.data = p.data.to(torch.float32)
                kept.append(prefix + name)
        for name, b in list(module._buffers.items()):
            if b is not None and b.is_floating_point() and pattern.search(prefix + name):
                module._buffers[name] = b.to(torch.float32)
                kept.append(prefix + name)
    return kept


@contextmanager
def default_dtype(dtype):
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def is_transformers_model(cls) -> bool:
    """A ``transformers.PreTrainedModel`` subclass (it has the library's own loader)."""
    return any(k.__name__ == "PreTrainedModel" and k.__module__.startswith("transformers")
               for k in getattr(cls, "__mro__", ()))


def load_with_transformers(cls, kwargs: dict, compute):
    """Build the tiny model in float32, save it, and load it back in the compute dtype."""
    model = cls(**kwargs)
    with tempfile.TemporaryDirectory(prefix="dtypelint-verify-") as folder:
        model.save_pretrained(folder)
        try:
            return cls.from_pretrained(folder, dtype=compute)
        except TypeError:  # releases before `dtype=` took over from `torch_dtype=`
            return cls.from_pretrained(folder, torch_dtype=compute)


def finite_weights(model) -> None:
    """Parameters left uninitialised (``torch.empty``) may hold NaN/inf: give them small values."""
    gen = torch.Generator().manual_seed(1)
    for t in [*model.parameters(), *model.buffers()]:
        if t.is_floating_point() and t.device.type == "cpu" and t.numel() and not torch.isfinite(t).all():
            with torch.no_grad():
                t.copy_((torch.randn(t.shape, generator=gen) * 0.02).to(t.dtype))


def build_class(cls, kwargs: dict, regime: str, compute, loader: str = ""):
    """An instance of ``cls`` built for ``regime`` (on CPU)."""
    if regime == "loaded":
        if loader == "transformers" and is_transformers_model(cls):
            model = load_with_transformers(cls, kwargs, compute)
        else:
            with default_dtype(compute):
                model = cls(**kwargs)
            apply_keep_in_fp32(model, str(compute).replace("torch.", ""))
    else:
        model = cls(**kwargs)
        if regime == "half":
            model = model.to(compute)
    finite_weights(model)
    return model


def submodule_of(container, cls):
    """The first submodule of ``container`` whose class is ``cls`` (by identity, else by name)."""
    for m in container.modules():
        if type(m) is cls:
            return m
    for m in container.modules():
        if type(m).__name__ == cls.__name__ and type(m).__module__ == cls.__module__:
            return m
    return None
