"""Path states: the interpreter keeps apart the paths on which values differ in dtype.

A ``State`` is one environment (variable -> abstract value) with the conditions that
lead to it.  Branches whose outcome the analysis cannot decide split a state in two;
states whose live variables agree in dtype merge again (their conditions reduce to the
clauses they share), so real model code, which has few dtype-relevant paths, keeps few
states.  Past ``MAX_STATES`` the most similar states are joined value by value (the
path-insensitive fallback).  A condition clause is remembered with its truth value, so
a later test of the same expression on that path is decided, not split again: values
from a branch that cannot reach a sink are never combined into a finding.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from dtypelint.analysis.lattice import Val, join

MAX_STATES = 16


class Clause:
    """One branch decision on a path: the tested expression (``key``: its structure) and its truth.
    ``text`` is how the user reads it ("`cache is None`"), spelled only when shown."""

    __slots__ = ("key", "truth", "_text", "_node", "_seg", "on_shape")

    def __init__(self, key: str, truth: bool, text: str | None = None, node: ast.AST | None = None, seg=None,
                 on_shape: bool = False):
        self.key = key
        self.truth = truth
        self._text = text
        self._node = node
        self._seg = seg
        # the decision tests a tensor's rank or sizes, which the analysis does not know: a finding that holds
        # only on such a path may hold on no path of the program (a 2-D mask never takes the 4-D branch)
        self.on_shape = on_shape

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "`" + condition_text(self._node, self.truth_as_written, self._seg) + "`"
        return self._text

    @property
    def truth_as_written(self) -> bool:
        return self.truth != fact_of(self._node)[1]

    def __eq__(self, other) -> bool:
        return isinstance(other, Clause) and self.key == other.key and self.truth == other.truth

    def __hash__(self) -> int:
        return hash((self.key, self.truth))


@dataclass(slots=True)
class State:
    env: dict[str, Val]
    clauses: tuple[Clause, ...] = ()
    facts: dict[str, bool] = field(default_factory=dict)

    def copy(self) -> "State":  # noqa: D401
        return State(dict(self.env), self.clauses, dict(self.facts))

    def assume(self, clause: Clause) -> "State":
        if self.facts.get(clause.key) == clause.truth:
            return self
        out = self.copy()
        out.clauses = self.clauses + (clause,)
        out.facts[clause.key] = clause.truth
        return out


def test_key(node: ast.AST) -> str:
    """A key for "the same test": the expression's structure without positions (cached on the node)."""
    key = getattr(node, "_dtl_test_key", None)
    if key is None:
        key = ast.dump(node, annotate_fields=False, include_attributes=False)
        node._dtl_test_key = key  # lives and dies with its tree
    return key


_FLIPPED = {ast.IsNot: ast.Is, ast.NotEq: ast.Eq, ast.NotIn: ast.In}


def canonical(node: ast.AST) -> tuple[ast.AST, bool]:
    """``(positive form, negated)``: ``x is not None`` is ``not (x is None)``, so both share one key."""
    negated = False
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node, negated = node.operand, not negated
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _FLIPPED:
        node = ast.Compare(left=node.left, ops=[_FLIPPED[type(node.ops[0])]()], comparators=node.comparators)
        negated = not negated
    return node, negated


def fact_of(node: ast.AST) -> tuple[str, bool]:
    """The fact key of a test and whether the test is its negation (cached on the node)."""
    hit = getattr(node, "_dtl_fact", None)
    if hit is None:
        pos, negated = canonical(node)
        hit = node._dtl_fact = (test_key(pos), negated)
    return hit


def clause(node: ast.AST, truth: bool, seg) -> Clause:
    """The clause "``node`` is ``truth``", worded as the user would write it (when it is shown)."""
    key, negated = fact_of(node)
    return Clause(key, truth != negated, None, node, seg, tests_shape(node))


_SHAPE_ATTRS = {"ndim"}
_SHAPE_METHODS = {"dim", "ndimension"}


def tests_shape(node: ast.AST) -> bool:
    """Whether a test reads a tensor's rank (``x.dim() == 4``, ``len(x.shape) == 4``, ``x.ndim == 2``).

    A rank tells input formats apart (a prepared 4-D mask, a 2-D padding mask); sizes (``x.shape[1] > n``) are
    lengths that any input may have, so paths on them stay ordinary paths."""
    hit = getattr(node, "_dtl_on_shape", None)
    if hit is None:
        hit = False
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "len" and sub.args \
                    and isinstance(sub.args[0], ast.Attribute) and sub.args[0].attr == "shape":
                hit = True  # len(x.shape)
                break
            if isinstance(sub, ast.Attribute) and sub.attr in _SHAPE_ATTRS:
                hit = True
                break
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in _SHAPE_METHODS:
                hit = True
                break
        node._dtl_on_shape = hit
    return hit


_NEGATED_OPS = {ast.Is: "is not", ast.IsNot: "is", ast.Eq: "!=", ast.NotEq: "==", ast.In: "not in",
                ast.NotIn: "in", ast.Lt: ">=", ast.LtE: ">", ast.Gt: "<=", ast.GtE: "<"}


def condition_text(node: ast.AST, truth: bool, seg) -> str:
    text = seg(node)
    if truth:
        return text
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return seg(node.operand)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _NEGATED_OPS:
        return f"{seg(node.left)} {_NEGATED_OPS[type(node.ops[0])]} {seg(node.comparators[0])}"
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return f"not {text}"
    return f"not ({text})"


def signature(v: Val) -> tuple:
    """What distinguishes two values for path splitting: dtypes, and what decides which code runs.

    Provenance, fix hints and values that carry no dtype (None, numbers, strings) do not: paths
    that differ only in those merge."""
    k = v.kind
    if v.is_tensor:
        return (k, v.zdim, bool(v.kept))
    if k == "unknown":
        return ("unknown", v.const == "cast")
    if k == "tuple":
        # which dtypes it holds, not how many items (accumulators like `all_hidden_states + (h,)`)
        return ("tuple", frozenset(signature(i) for i in v.items))
    if k == "seq":
        return ("seq", signature(v.ref) if isinstance(v.ref, Val) else ())
    if k == "dict":
        return ("dict", tuple(signature(i) for i in v.items))
    if k == "module":
        r = v.ref
        return ("module", r.cls, r.kept, r.explicit, r.alts, r.optional, r.forced)
    if k == "func":
        return ("func", id(getattr(v.ref, "node", None)))
    if k in ("qname", "dtype", "pybool"):
        return (k, v.const)
    if k == "modclass":
        return (k, getattr(v.ref, "cls", None))
    if k == "object":
        return (k, getattr(v.ref.cls, "qname", None), tuple((a, signature(x)) for a, x in v.ref.attrs))
    return ("other",)


def state_signature(s: State, live: set[str] | None) -> dict:
    """Variable -> value signature, for the variables still read later (and attributes)."""
    if live is None:
        return {k: signature(v) for k, v in s.env.items()}
    return {k: signature(v) for k, v in s.env.items() if k in live or "." in k}


def signature_key(sig: dict) -> frozenset:
    return frozenset(sig.items())


SHAPE_MERGE = Clause("merged:shape", True, "a shape test", on_shape=True)


def merge_two(a: State, b: State) -> State:
    env = dict(a.env)
    changed = False
    for k, v in b.env.items():
        old = env.get(k)
        if old is not v:
            env[k] = join(old, v) if old is not None else v
            # a tensor on one side, None on the other: the tensor exists only on its side's path
            changed = changed or (old is not None and (old.kind == "none") != (v.kind == "none")
                                  and (old.is_tensor or v.is_tensor))
    shared = tuple(c for c in a.clauses if c in b.clauses)
    if changed and SHAPE_MERGE not in shared and any(
            c.on_shape for c in a.clauses + b.clauses if c not in shared):
        # the merged values differ by a shape test the analysis cannot decide (a 4-D mask returned as-is, or
        # None): what holds only on one side now holds on a path that may not exist, so say so
        shared += (SHAPE_MERGE,)
    facts = {k: v for k, v in a.facts.items() if b.facts.get(k) == v}
    return State(env, shared, facts)


_FLOAT_KINDS = frozenset({"low", "olp", "fp32", "fp64"})
_TENSOR_KINDS = _FLOAT_KINDS | {"int", "bool"}
_CALLABLE = frozenset({"qname", "func", "modclass", "module", "dtype"})


def _distinct(sx: tuple | None, sy: tuple | None, decision: bool) -> bool:
    """Whether two values of one variable keep their paths apart: they differ in a dtype the analysis
    knows (a float tensor on one path, another dtype or an unknown value on the other), in the code a
    call would run (two different callables or modules), or in a flag the function tests.  A value
    with no dtype (None, a number, a missing variable) merges with anything."""
    if sx is None or sy is None:
        return False
    kx, ky = sx[0], sy[0]
    if kx in _TENSOR_KINDS or ky in _TENSOR_KINDS:
        if kx in _TENSOR_KINDS and ky in _TENSOR_KINDS:
            return kx != ky or sx[2] != sy[2]
        other = ky if kx in _TENSOR_KINDS else kx
        tensor_kind = kx if kx in _TENSOR_KINDS else ky
        return other == "unknown" and tensor_kind in _FLOAT_KINDS
    if kx == ky and kx in _CALLABLE:
        return True  # (sx != sy: checked by the caller)
    if kx == "object" or ky == "object":
        return True  # an object built on one path only (`cache = KVCache(...) if use_cache else None`)
    if kx == ky == "pybool":
        return decision
    if kx == ky and kx in ("tuple", "seq", "dict"):
        fx = {i for i in (sx[1] if kx != "seq" else (sx[1],)) if i and i[0] in _FLOAT_KINDS}
        fy = {i for i in (sy[1] if ky != "seq" else (sy[1],)) if i and i[0] in _FLOAT_KINDS}
        return fx != fy
    return False


def _same_paths(a: State, b: State, live: set[str] | None, decisions: frozenset = frozenset()) -> bool:
    """States that may share one: no live variable differs in a way ``_distinct`` keeps apart (values a
    branch did not touch are the same objects, so most comparisons are by identity)."""
    ea, eb = a.env, b.env
    for k in ea.keys() | eb.keys():
        if live is not None and k not in live and "." not in k:
            continue
        x, y = ea.get(k), eb.get(k)
        if x is y or x is None or y is None:
            continue
        sx, sy = signature(x), signature(y)
        if sx != sy and _distinct(sx, sy, k in decisions):
            return False
    return True


def decision_names(fn: ast.AST) -> frozenset:
    """Names a function tests (``if``, ``while``, ``a if c else b``, ``assert``): their values decide
    which code runs, so paths that differ in them stay apart."""
    from dtypelint.analysis.fninfo import info

    return info(fn).decisions


def merge_states(states: list[State], live: set[str] | None = None, limit: int = MAX_STATES,
                 decisions: frozenset = frozenset()) -> list[State]:
    """Merge states that agree on the dtypes of the live variables; then enforce the bound."""
    if len(states) <= 1:
        return states
    groups: list[State] = []
    for s in states:
        for i, g in enumerate(groups):
            if _same_paths(g, s, live, decisions):
                groups[i] = merge_two(g, s)
                break
        else:
            groups.append(s)
    if len(groups) > limit:
        # the path-insensitive fallback: join neighbouring states (they come from neighbouring branches)
        per = -(-len(groups) // limit)
        out = []
        for i in range(0, len(groups), per):
            chunk = groups[i:i + per]
            acc = chunk[0]
            for st in chunk[1:]:
                acc = merge_two(acc, st)
            out.append(acc)
        return out
    return groups
