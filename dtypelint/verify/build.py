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
from typing import Callable

import torch


def keep_in_fp32_names(model, compute_dtype: str = "float16") -> list[str]:
    """``_keep_in_fp32_modules`` (honoured when loading in fp16) and ``_keep_in_fp32_modules_strict``
    (fp16 and bf16) of the model's class, like transformers' ``from_pretrained``: a plain class
    attribute, so a subclass's list replaces its base's (an inherited list applies unchanged)."""
    cls = model if isinstance(model, type) else type(model)
    names: list[str] = []
    if compute_dtype == "float16":
        names.extend(getattr(cls, "_keep_in_fp32_modules", None) or [])
    names.extend(getattr(cls, "_keep_in_fp32_modules_strict", None) or [])
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


_CHECKPOINTS: dict[tuple, str] = {}  # (class, arguments) -> a saved tiny checkpoint (the fixed copies load it too)


def _key_of(cls, kwargs: dict) -> tuple:
    def describe(v):
        to_json = getattr(v, "to_json_string", None)
        return to_json() if callable(to_json) else repr(v)

    return (cls.__module__, cls.__qualname__, tuple(sorted((k, describe(v)) for k, v in kwargs.items())))


def load_with_transformers(cls, kwargs: dict, compute):
    """Build the tiny model in float32, save it (once per class and arguments), and load it back with
    ``from_pretrained(..., dtype=compute)``."""
    key = _key_of(cls, kwargs)
    folder = _CHECKPOINTS.get(key)
    if folder is None:
        folder = tempfile.mkdtemp(prefix="dtypelint-verify-ckpt-")
        cls(**kwargs).save_pretrained(folder)
        _CHECKPOINTS[key] = folder
    try:
        return cls.from_pretrained(folder, dtype=compute)
    except TypeError:  # releases before `dtype=` took over from `torch_dtype=`
        return cls.from_pretrained(folder, torch_dtype=compute)


def clear_checkpoints() -> None:
    import shutil

    for folder in _CHECKPOINTS.values():
        shutil.rmtree(folder, ignore_errors=True)
    _CHECKPOINTS.clear()


def finite_weights(model) -> None:
    """Parameters left uninitialised (``torch.empty``) may hold NaN/inf: give them small values."""
    gen = torch.Generator().manual_seed(1)
    for t in [*model.parameters(), *model.buffers()]:
        if t.is_floating_point() and t.device.type == "cpu" and t.numel() and not torch.isfinite(t).all():
            with torch.no_grad():
                t.copy_((torch.randn(t.shape, generator=gen) * 0.02).to(t.dtype))


def build_class(cls, kwargs: dict | Callable[[], dict], regime: str, compute, loader: str = "", notes=None):
    """An instance of ``cls`` built for ``regime`` (on CPU).  ``kwargs`` may be a callable giving fresh
    arguments; ``notes`` (a list) receives a line when the library loader failed and was emulated."""
    make = kwargs if callable(kwargs) else (lambda: dict(kwargs))
    if regime == "loaded":
        model = None
        if loader == "transformers" and is_transformers_model(cls):
            try:
                model = load_with_transformers(cls, make(), compute)
            except Exception as exc:
                if notes is not None:
                    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    notes.append(f"from_pretrained failed ({type(exc).__name__}: {text[:120]}); loading emulated")
        if model is not None:
            pass
        else:
            with default_dtype(compute):
                model = cls(**make())
            apply_keep_in_fp32(model, str(compute).replace("torch.", ""))
    else:
        model = cls(**make())
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
