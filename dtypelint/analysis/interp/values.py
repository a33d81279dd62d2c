"""Interpreter values beyond tensors: modules, functions, callables, and marker values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dtypelint.analysis.lattice import FLOATS, TENSORS, Val


@dataclass(frozen=True)
class ModuleRef:
    """A submodule instance: its attribute text, class and whether it is kept fp32 when loaded."""

    text: str
    cls: str
    kept: str = ""  # why it is kept fp32 in the loaded regime ("" = not kept)
    row: int = 0
    col: int = 0
    filename: str = ""
    elem: str = ""  # element class of a ModuleList / Sequential
    chain: tuple[str, ...] = ()  # classes of an nn.Sequential in call order
    path: str = ""  # attribute path inside the model (``DenseReluDense.wo``), matched by keep lists
    explicit: str = ""  # the instance itself was built in float32 (dtype= / .float()): why
    alts: tuple[str, ...] = ()  # other classes `__init__` may choose (`A(...) if flag else B(...)`)
    optional: bool = False  # `__init__` may also set it to None (`Embedding(...) if n else None`)
    owner: str = ""  # qualified class of the model whose attribute this is (keep lists apply per model)
    forced: str = ""  # converted to float32 at run time (`self.sub.float()` in forward): why; every regime
    items: tuple = ()  # (key, class, explicit fp32) of a ModuleDict / Sequential / ModuleList's literal members
    elem_chain: tuple[str, ...] = ()  # classes of the element when it is an nn.Sequential

    def element(self) -> "ModuleRef | None":
        if not self.elem:
            return None
        return ModuleRef(f"{self.text}[i]", self.elem, self.kept, self.row, self.col, self.filename,
                         chain=self.elem_chain, path=f"{self.path}.0", explicit=self.explicit, owner=self.owner,
                         forced=self.forced)


@dataclass(frozen=True)
class FuncRef:
    node: Any  # ast.FunctionDef / ast.Lambda
    cls: Any = None  # ClassFacts of the method's class
    fa: Any = None  # the FileAnalysis the node belongs to (None: the current file)
    bound: tuple = ()  # functools.partial: positional values bound first
    bound_kw: tuple = ()  # functools.partial: (name, value) pairs


# `x.shape` / `x.size()`: its items are Python ints
SHAPE = Val("shape")
# a value cast to a dtype the analysis cannot see (`x.to(get_dtype(m))`): unknown, but marked as
# deliberately aligned by its author (the marker survives shape ops, modules and helper calls)
CAST_UNKNOWN = Val("unknown", const="cast")


def is_cast_unknown(v: Val | None) -> bool:
    return v is not None and v.kind == "unknown" and v.const == "cast"


def qname_val(q: str) -> Val:
    return Val("qname", const=q)


@dataclass(frozen=True)
class ObjRef:
    """An instance of a project class built at run time (a KV cache object): its attributes as the
    constructor set them, and the class whose methods run on it."""

    cls: Any  # ClassFacts
    fa: Any  # FileAnalysis of the class
    attrs: tuple[tuple[str, Val], ...] = ()

    def attr(self, name: str) -> Val | None:
        for k, v in self.attrs:
            if k == name:
                return v
        return None


def floating_truth(kind) -> Val:
    """``dtype.is_floating_point`` / ``t.is_floating_point()`` of a known dtype kind (a Python bool)."""
    if kind in FLOATS:
        return Val("pybool", const=True)
    if kind in TENSORS:
        return Val("pybool", const=False)
    return Val("pybool", const=None)
