"""A data-only encoding for cache entries: JSON that can describe values but never run code.

The cache folder may be written by someone else (a CI cache restored from another
branch, a shared checkout), so an entry is untrusted input.  Pickle would execute
whatever such an entry asks for; this codec can only rebuild plain data:

- ``None``, ``bool``, ``int``, ``float``, ``str``, lists and ``str``-keyed dicts as themselves;
- tuples as ``{"__t__": [...]}``, frozensets as ``{"__fs__": [...]}``, other dicts as
  ``{"__dict__": [[key, value], ...]}``;
- dataclass instances as ``{"__dc__": "module:QualName", field: value, ...}``, decoded only
  into dataclasses defined in ``dtypelint`` modules that are already imported or that live in
  an allow-listed ``dtypelint`` package, and only when the stored fields are exactly the
  class's fields (a class that gained or lost a field makes old entries misses);
- long strings once, in a table, referenced as ``{"__s__": index}`` (project-index entries
  repeat their file's source text; pickle's memo did the same).

Anything else is refused with :class:`CodecError` on both sides; the cache treats that as
a miss.  The payload is two JSON lines: the string table, then the value.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import re
import sys
from typing import Any

TRUSTED_PACKAGE = "dtypelint"
# Packages whose modules may be imported to decode an entry (the project-index dataclasses
# live here and are imported lazily, so a warm cache may meet them before the analysis ran).
IMPORTABLE_PACKAGES = ("dtypelint.analysis", "dtypelint.diagnostics", "dtypelint.config", "dtypelint.index")
SHARED_STRING_MIN = 48  # strings at least this long are stored once

_DC, _TUPLE, _FROZENSET, _DICT, _STR = "__dc__", "__t__", "__fs__", "__dict__", "__s__"
_MARKERS = frozenset((_DC, _TUPLE, _FROZENSET, _DICT, _STR))
_MODULE_RE = re.compile(r"^dtypelint(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_QUALNAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class CodecError(ValueError):
    """A value this codec will not encode, or a payload it will not decode."""


# -- encoding --------------------------------------------------------------------------


def dumps(value: Any) -> bytes:
    """Encode ``value``; raises CodecError for a type outside the data model."""
    table: list[str] = []
    index: dict[str, int] = {}
    try:
        body = _encode(value, table, index)
        head = json.dumps(table, ensure_ascii=False, separators=(",", ":"))
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    except RecursionError as exc:
        raise CodecError("value nested too deeply") from exc
    return (head + "\n" + text + "\n").encode("utf-8", "surrogatepass")


def _encode(v: Any, table: list[str], index: dict[str, int]) -> Any:
    t = type(v)
    if v is None or t is bool or t is int or t is float:
        return v
    if t is str:
        if len(v) < SHARED_STRING_MIN:
            return v
        i = index.get(v)
        if i is None:
            i = index[v] = len(table)
            table.append(v)
        return {_STR: i}
    if t is tuple:
        return {_TUPLE: [_encode(x, table, index) for x in v]}
    if t is list:
        return [_encode(x, table, index) for x in v]
    if t is dict:
        if all(type(k) is str for k in v) and not (_MARKERS & v.keys()):
            return {k: _encode(x, table, index) for k, x in v.items()}
        return {_DICT: [[_encode(k, table, index), _encode(x, table, index)] for k, x in v.items()]}
    if t is frozenset:
        items = [_encode(x, table, index) for x in v]
        items.sort(key=lambda x: json.dumps(x, sort_keys=True))
        return {_FROZENSET: items}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        module = t.__module__
        if not _MODULE_RE.match(module) or "<" in t.__qualname__:
            raise CodecError(f"dataclass {module}.{t.__qualname__} is not a dtypelint class")
        out: dict[str, Any] = {_DC: f"{module}:{t.__qualname__}"}
        for f in dataclasses.fields(v):
            if f.name in _MARKERS:
                raise CodecError(f"field name {f.name!r} is reserved")
            out[f.name] = _encode(getattr(v, f.name), table, index)
        return out
    raise CodecError(f"cannot encode a value of type {t.__module__}.{t.__qualname__}")


# -- decoding --------------------------------------------------------------------------


def loads(data: bytes) -> Any:
    """Decode a payload of :func:`dumps`; raises CodecError for anything else."""
    try:
        text = data.decode("utf-8", "surrogatepass")
        head, body, rest = text.split("\n", 2)
        if rest:
            raise CodecError("trailing data")
        table = json.loads(head)
        if type(table) is not list or not all(type(s) is str for s in table):
            raise CodecError("bad string table")
        return json.loads(body, object_hook=_Decoder(table).object, parse_constant=_constant)
    except CodecError:
        raise
    except (ValueError, TypeError, RecursionError, MemoryError) as exc:  # JSONDecodeError is a ValueError
        raise CodecError(f"undecodable payload: {type(exc).__name__}") from None


def _constant(name: str) -> float:
    return float(name)  # NaN / Infinity / -Infinity: floats, nothing else


class _Decoder:
    def __init__(self, table: list[str]):
        self.table = table

    def object(self, d: dict[str, Any]) -> Any:
        if len(d) == 1:
            ((marker, payload),) = d.items()
            if marker == _TUPLE and type(payload) is list:
                return tuple(payload)
            if marker == _STR:
                if type(payload) is not int or not 0 <= payload < len(self.table):
                    raise CodecError("bad string reference")
                return self.table[payload]
            if marker == _FROZENSET and type(payload) is list:
                return frozenset(payload)
            if marker == _DICT and type(payload) is list:
                if not all(type(p) is list and len(p) == 2 for p in payload):
                    raise CodecError("__dict__ needs [key, value] pairs")
                return {k: v for k, v in payload}
        name = d.get(_DC)
        if name is not None:
            return _build_dataclass(name, d)
        if _MARKERS.isdisjoint(d):
            return d
        raise CodecError("a malformed marker object")


# "module:QualName" -> (class, the stored keys it needs, fields set after construction)
_CLASSES: dict[str, tuple[type, frozenset[str], bool]] = {}


def _build_dataclass(name: Any, d: dict[str, Any]) -> Any:
    """An instance built like pickle builds one: no ``__init__``, the stored fields exactly."""
    if type(name) is not str:
        raise CodecError("bad dataclass name")
    known = _CLASSES.get(name)
    if known is None:
        cls = _resolve(name)
        keys = frozenset(f.name for f in dataclasses.fields(cls)) | {_DC}
        known = _CLASSES[name] = (cls, keys, hasattr(cls, "__slots__"))
    cls, keys, slotted = known
    if d.keys() != keys:
        raise CodecError(f"{name}: stored fields do not match the class")
    del d[_DC]
    obj = cls.__new__(cls)
    if slotted:
        for k, v in d.items():
            object.__setattr__(obj, k, v)
    else:
        obj.__dict__.update(d)
    return obj


def _resolve(name: str) -> type:
    """The dtypelint dataclass called ``module:QualName``; never imports a module outside dtypelint."""
    module_name, _, qualname = name.partition(":")
    if not _MODULE_RE.match(module_name) or not _QUALNAME_RE.match(qualname):
        raise CodecError(f"refusing to decode a {name!r}")
    module = sys.modules.get(module_name)
    if module is None:
        if not any(module_name == p or module_name.startswith(p + ".") for p in IMPORTABLE_PACKAGES):
            raise CodecError(f"refusing to import {module_name!r}")
        try:
            if importlib.util.find_spec(module_name) is None:
                raise CodecError(f"no module {module_name!r}")
            module = importlib.import_module(module_name)
        except ImportError:
            raise CodecError(f"no module {module_name!r}") from None
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module_name
            and (obj.__module__ + "." + obj.__qualname__).startswith(TRUSTED_PACKAGE + ".")):
        raise CodecError(f"{name!r} is not a dtypelint dataclass")
    return obj
