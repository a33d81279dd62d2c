"""Abstract values of the dtype analysis, with provenance.

A ``Val`` is what the interpreter knows about one Python value: for a tensor its
dtype class (``low`` = the compute dtype, ``olp`` = the *other* low-precision dtype,
``fp32``, ``fp64``, ``int``, ``bool``) and whether it is 0-dim (0-dim tensors and
Python scalars never promote a dim>=1 tensor, facts §2.1); for anything else a
small tag.  ``unknown`` never produces a finding.  Every value carries the
provenance steps that made it what it is, so a diagnostic can show the path from
the fp32 source to the sink.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

FLOATS = ("low", "olp", "fp32", "fp64")
TENSORS = FLOATS + ("int", "bool")
# widening order of floating kinds (low and olp meet at fp32)
RANK = {"bool": 0, "int": 1, "low": 2, "olp": 2, "fp32": 3, "fp64": 4}
MAX_PATH = 10


@dataclass(frozen=True)
class Step:
    """One provenance step: where (file, 1-based row/col) and why."""

    filename: str
    row: int
    col: int
    message: str
    # what the step did, for rules that tell an author's explicit upcast ("cast") from a type
    # promotion that widened a low-precision operand ("promote"); not part of equality
    kind: str = field(default="", compare=False)
    # what kind of float32 source this step is, for rules that classify by provenance:
    # factory | table | upcast | softmax | island | promoted ('' for ordinary steps)
    origin: str = ""


@dataclass(eq=True, slots=True)
class Val:
    """Treated as immutable (``dataclasses.replace`` makes changed copies); not frozen because frozen
    dataclasses are several times slower to build, and the interpreter builds millions of values."""

    kind: str  # a TENSORS kind, or scalar/dtype/module/self/none/tuple/pybool/str/func/unknown
    zdim: bool = False  # 0-dim tensor
    prov: tuple[Step, ...] = ()
    const: Any = None  # python constant, dtype kind ("fp32"...), bool for pybool
    items: tuple["Val", ...] = ()  # tuple / list items
    ref: Any = None  # ModuleRef for submodules, FuncRef for functions
    kept: str = ""  # non-empty: output of an fp32-kept module (its name), for DTL104
    scalar_float: bool = False  # Python float (vs int), for int-tensor promotion
    # where a fix at the fp32 source is possible (rules.py builds it): ("operand", node, dtype_expr),
    # ("output", call_node, dtype_expr) or ("alloc", call_node, (dtype_expr, ...)); None otherwise.
    # Not part of equality: it never changes what the analysis claims.
    hint: Any = field(default=None, compare=False)

    @property
    def is_tensor(self) -> bool:
        return self.kind in TENSORS

    @property
    def is_float(self) -> bool:
        return self.kind in FLOATS

    def with_step(self, step: Step | None) -> "Val":
        if step is None:
            return self
        prov = self.prov + (step,)
        if len(prov) > MAX_PATH:
            prov = prov[:3] + prov[-(MAX_PATH - 3):]
        return replace(self, prov=prov)


UNKNOWN = Val("unknown")
NONE = Val("none")
SCALAR = Val("scalar")


def tensor(kind: str, prov: tuple[Step, ...] = (), zdim: bool = False, kept: str = "", hint: Any = None) -> Val:
    return Val(kind, zdim=zdim, prov=prov, kept=kept, hint=hint)


def dtype_val(kind: str, prov: tuple[Step, ...] = ()) -> Val:
    return Val("dtype", const=kind, prov=prov)


def widest(a: str, b: str) -> str:
    """Type promotion between two dim>=1 tensor kinds of the same priority."""
    if a == b:
        return a
    if {a, b} == {"low", "olp"}:
        return "fp32"  # bf16 + fp16 -> fp32 (facts §2.1)
    return a if RANK[a] >= RANK[b] else b


def promote(vals: list[Val]) -> tuple[Val | None, Val | None]:
    """Ordinary type promotion of the tensor/scalar operands (facts §2.1).

    Returns ``(result, winner)`` where winner is the operand whose dtype won (its
    provenance is carried), or ``(None, None)`` when nothing is known.  Unknown
    operands are ignored when some other dim>=1 operand is known.
    """
    dims = [v for v in vals if v.is_tensor and not v.zdim]
    zeros = [v for v in vals if v.is_tensor and v.zdim]
    scalars = [v for v in vals if v.kind == "scalar"]
    if any(v.kind == "unknown" for v in vals):
        # an operand of unknown dtype could be the widest one: the result is unknown
        return None, None
    if dims:
        best = dims[0]
        kind = best.kind
        for v in dims[1:]:
            k = widest(kind, v.kind)
            if k != kind:
                best = v if k == v.kind else best
                kind = k
        if kind in ("int", "bool"):
            # a higher-category lower-priority operand decides: 0-dim float, then Python float
            fz = [v for v in zeros if v.is_float]
            if fz:
                return replace(fz[0], zdim=False), fz[0]
            if any(s.scalar_float for s in scalars):
                return tensor("fp32"), None
            return tensor(kind, best.prov), best
        if best.kind != kind:  # low + olp
            return tensor(kind, best.prov, kept=best.kept), best
        return tensor(kind, best.prov, kept=best.kept, hint=best.hint), best
    if zeros:
        kind = zeros[0].kind
        best = zeros[0]
        for v in zeros[1:]:
            k = widest(kind, v.kind)
            if k != kind:
                best, kind = v, k
        if kind in ("int", "bool") and any(s.scalar_float for s in scalars):
            return tensor("fp32", zdim=True), None  # a 0-dim int tensor ** 0.25: the default dtype, still 0-dim
        return tensor(kind, best.prov, zdim=True), best
    if scalars:
        return SCALAR, None
    return None, None


def join(a: Val, b: Val) -> Val:
    """Merge two control-flow paths (may-analysis: a possibly-fp32 value stays fp32)."""
    if a == b:
        return a
    if a.kind == "unknown" or b.kind == "unknown":
        # a path on which the dtype is unknown makes the merged dtype unknown: the analysis
        # only claims a dtype that holds on every path it can see (unknown never reports)
        return UNKNOWN
    if a.is_tensor and b.is_tensor:
        if a.is_float and b.is_float:
            if RANK[a.kind] > RANK[b.kind]:
                return a
            if RANK[b.kind] > RANK[a.kind]:
                return b
            if a.kind != b.kind:
                return a
            # same kind: keep the one with provenance; 0-dim only if both are
            w = a if len(a.prov) >= len(b.prov) else b
            return replace(w, zdim=a.zdim and b.zdim, kept=a.kept or b.kept)
        if a.is_float:
            return a
        if b.is_float:
            return b
        return a if a.kind == b.kind else UNKNOWN
    if a.is_tensor and b.kind == "none":
        return a
    if b.is_tensor and a.kind == "none":
        return b
    if a.kind == b.kind == "tuple" and len(a.items) == len(b.items):
        return Val("tuple", items=tuple(join(x, y) for x, y in zip(a.items, b.items)))
    if a.kind in ("tuple", "seq") and b.kind in ("tuple", "seq"):
        # containers of different lengths (a list grown in a loop): a sequence of the joined items
        items = [i for v in (a, b) for i in (v.items if v.kind == "tuple" else
                                             ((v.ref,) if isinstance(v.ref, Val) else ()))]
        elem = None
        for i in items:
            elem = i if elem is None else join(elem, i)
        return Val("seq", ref=elem if elem is not None else UNKNOWN)
    if a.kind == b.kind == "pybool":
        return Val("pybool", const=None)
    if a.kind == b.kind and a.kind in ("scalar", "dtype", "module", "self", "str", "none"):
        if a.kind == "dtype" and a.const != b.const:
            return Val("dtype", const=None)
        return a
    return UNKNOWN


def dtype_name(kind: str, compute: str) -> str:
    """Human name of a kind for messages: fp32 -> float32, low -> float16 (the compute dtype)."""
    other = "bfloat16" if compute == "float16" else "float16"
    return {"low": compute, "olp": other, "fp32": "float32", "fp64": "float64", "int": "int64",
            "bool": "bool"}.get(kind, kind)
