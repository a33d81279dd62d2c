"""DTL114 module-boundary-dtype-leak: a module's forward (or public method) returns float32 for low-precision
inputs because a float32 operand was mixed in by type promotion (not because its author upcast on purpose)."""

from __future__ import annotations

import ast

from dtypelint.analysis.lattice import dtype_name
from dtypelint.rules.base import CLEAN, Finding

CODE = "DTL114"
KINDS = ("return",)
# float32 sources that the promotion rules DTL110-DTL113 name more precisely (this rule covers the rest:
# masks, scales, clamp bounds, parameters kept in float32)
CLASSIFIED = frozenset({"factory", "table", "softmax", "island"})
CONTEXT_CHECKED = True


def judge(e):
    if e.ac or e.regime == "autocast":
        # under autocast the next autocast op casts its inputs back, and the residual stream is float32 anyway
        return None
    fa = e.scope.fa
    fn = e.detail["fn"]
    if not is_boundary(fa, fn):
        return None
    out = e.operands[0]  # a module's output is its first returned value (attention weights etc. follow)
    v = out.val
    leak = v.kind in ("fp32", "fp64") and not v.zdim and promotion_here(fa, fn, v.prov) is not None
    if e.depth > 0:
        # a caller's actual arguments: clean where it passes no low-precision input (this file uses the
        # function in float32 on purpose: a router's statistics module fed float32 routing weights), or
        # passes low-precision inputs and gets them back (the float32 operand is low there)
        if not e.detail["entry_low"] or (not leak and (v.kind in ("low", "olp") or (v.is_float and v.zdim))):
            return CLEAN
        return None
    if not e.detail["entry_low"]:
        return None  # no low-precision input: not a boundary this rule judges
    if leak and reads_input(fa, fn, e.node if len(e.operands) == 1 else out.node, e.detail.get("main", "")):
        return finding(e, out)
    if v.kind in ("low", "olp") or (v.is_float and v.zdim):
        return CLEAN
    return None


def promotion_here(fa, fn, prov) -> int | None:
    """Index of the first step that widened a low-precision operand by type promotion, when the value was
    never cast to float32 explicitly (an explicit upcast is intent) and the leak belongs to this function:
    the promotion is in its body, or in a helper of this file that could not see the float32 source on its
    own (a private helper, or a public one given the float32 operand by this function)."""
    if any(s.kind == "cast" for s in prov):
        return None
    promos = [i for i, s in enumerate(prov) if s.kind == "promote"]
    if not promos:
        return None
    first = promos[0]  # where a low-precision value first met the float32 one: the leak's cause
    if any(s.origin in CLASSIFIED for s in prov[:first + 1]):
        return None  # a default-dtype factory, a position table, a softmax or an island: DTL110-DTL113 say which
    step = prov[first]
    if step.filename != fa.filename:
        return None  # the promotion is in another file's function, which is reported there
    if within(fn, step.row):
        return first
    helper, owner_class = enclosing_function(fa.tree, step.row)
    if helper is None:
        return None
    if is_boundary(fa, helper):
        origin = prov[0]
        sees = origin.filename == fa.filename and (within(helper, origin.row) or
                                                   (owner_class is not None and within(owner_class, origin.row)))
        if sees:
            return None  # the helper's own return is reported
    return first


# reading these of a tensor does not carry its values (or its dtype) into the result
META_ATTRS = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad"})
META_CALLS = frozenset({"size", "dim", "numel", "get_device", "element_size"})


def reads_input(fa, fn, node, main: str) -> bool:
    """Whether the returned expression is computed from the function's main input (its first
    low-precision parameter), following local assignments; a table built only from coordinates or
    sizes (``hidden_states.shape``, ``hidden_states.device``) is not the input's activation."""
    if not main:
        return False
    defs = fa.assignments(fn)
    seen: set[str] = set()
    todo = value_names(node)
    while todo:
        name = todo.pop()
        if name == main:
            return True
        if name in seen or len(seen) > 200:
            continue
        seen.add(name)
        for value in defs.get(name, ()):
            todo.extend(value_names(value))
    return False


def value_names(node) -> list[str]:
    """Names whose values an expression reads (not through ``x.shape`` / ``x.device`` / ``x.size()``)."""
    out: list[str] = []
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Attribute) and n.attr in META_ATTRS:
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in META_CALLS:
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("len", "isinstance"):
            continue
        if isinstance(n, ast.Name):
            out.append(n.id)
        todo.extend(ast.iter_child_nodes(n))
    return out


def within(node, row: int) -> bool:
    return node.lineno <= row <= (node.end_lineno or node.lineno)


def enclosing_function(tree: ast.Module, row: int):
    """The innermost function containing ``row`` and the top-level class it is a method of (or None)."""
    best, best_class = None, None
    for top in tree.body:
        if not within(top, row):
            continue
        cls = top if isinstance(top, ast.ClassDef) else None
        for node in ast.walk(top):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and within(node, row):
                if best is None or node.lineno >= best.lineno:
                    best, best_class = node, cls
    return best, best_class


MODULE_BASES = ("Module", "PreTrainedModel", "ModelMixin")


def is_boundary(fa, fn) -> bool:
    """A method of an ``nn.Module`` class (one with a ``forward``, or an nn base): its ``forward`` or a public
    method.  Module-level functions are helpers: a promotion in one is reported at the module that calls it."""
    name = getattr(fn, "name", "")
    if not name or (name.startswith("_") and name != "forward"):
        return False
    for node in fa.tree.body:
        if isinstance(node, ast.ClassDef) and any(item is fn for item in node.body):
            hit = fa.classes.get(node.name)
            if hit is None:
                return False
            return any("forward" in anc.methods or any(b.rsplit(".", 1)[-1] in MODULE_BASES for b in anc.bases)
                       for anc in fa.ancestors(hit[1]))
    return False


def finding(e, o) -> Finding:
    scope = e.scope
    cd = scope.compute
    v = o.val
    wn, ln = dtype_name(v.kind, cd), dtype_name("low", cd)
    fname = e.sink
    msg = (f"`{fname}()` returns `{o.label}` as {wn} for {ln} inputs in the {{regimes}}: a {wn} operand is mixed "
           f"in by type promotion, so the caller's next layer fails (equal-dtype ops) or silently runs in {wn}")
    return Finding(CODE, e, msg, v.prov,
                   f"the {wn} result leaves `{fname}()` (an implicit upcast at the module boundary, not an explicit cast)",
                   fix_for(e, o))


def fix_for(e, o):
    scope = e.scope
    h = o.val.hint
    if h is not None and h[3] == id(scope.fa):
        style, node, arg = h[0], h[1], h[2]
        if style == "operand":
            return ("unsafe", f"Cast `{scope.seg(node)}` to `{arg}` where it is used (the float32 operand that "
                              f"promotes the output)", [(node, "cast", arg)])
        if style == "output":
            return ("unsafe", f"Cast the output of `{scope.seg(node.func)}(...)` back to `{arg}`", [(node, "cast", arg)])
        if style == "alloc":
            return ("unsafe", f"Add `dtype={arg[0]}` to `{scope.seg(node.func)}(...)`", [(node, "dtype", arg[0])])
    targets = [t for t in scope.dtype_in_scope("low") if "." not in t] or scope.dtype_in_scope("low")
    if not targets or o.node is None:
        return None
    return ("unsafe", f"Cast the returned `{o.label}` back to `{targets[0]}`", [(o.node, "cast", targets[0])])
