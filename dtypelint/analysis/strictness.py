"""Dtype-strict callees: functions whose body declares that some parameters share one dtype.

A kernel wrapper that asserts ``q.dtype == k.dtype == v.dtype`` (or raises when they
differ) is itself a sink with an equal-dtype contract.  Recognised forms: chained and
``and``-joined comparisons in ``assert`` / ``if ...: raise`` / ``torch._assert``,
``assert all(t.dtype == q.dtype for t in (k, v))`` and ``len({q.dtype, k.dtype}) == 1``.
A wrapper that passes its parameters on (as they are, or through shape-only ops) to
such a callee is strict in them too; ``transitive_params`` follows that through a few
levels of calls, in this file or another.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterable

# ops that change a tensor's shape or layout, never its dtype: a value passed through them is still "the parameter"
SHAPE_ONLY = frozenset({"view", "reshape", "contiguous", "transpose", "permute", "unsqueeze", "squeeze", "flatten",
                        "unflatten", "expand", "expand_as", "clone", "detach", "movedim", "swapaxes", "view_as",
                        "reshape_as", "rearrange", "repeat", "narrow", "split", "chunk", "unbind"})


def _params(fn) -> list[str]:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def _dtype_owner(e: ast.AST) -> str | None:
    """``q.dtype`` -> "q"."""
    if isinstance(e, ast.Attribute) and e.attr == "dtype" and isinstance(e.value, ast.Name):
        return e.value.id
    return None


def _equal_dtype_names(test: ast.AST, params: set[str], fn=None) -> list[str]:
    """Parameter names whose dtypes ``test`` requires to be equal (empty when it says nothing of that)."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand  # `if not (q.dtype == k.dtype): raise`
    parts = test.values if isinstance(test, ast.BoolOp) else [test]
    found: list[str] = []
    for p in parts:
        if isinstance(p, ast.Compare) and len(p.ops) == 1 and isinstance(p.left, ast.Call):
            found.extend(_len_of_dtype_set(p, params, fn))
        elif isinstance(p, ast.Compare) and all(isinstance(o, (ast.Eq, ast.NotEq)) for o in p.ops):
            names = [_dtype_owner(e) for e in [p.left] + list(p.comparators)]
            if all(names) and len({n for n in names if n in params}) >= 2:
                found.extend(n for n in names if n in params)
        elif isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id == "all" and p.args \
                and isinstance(p.args[0], ast.GeneratorExp):
            found.extend(_all_form(p.args[0], params))
    return found


def _dtype_set_names(node: ast.AST, fn, params: set[str]) -> list[str]:
    """``{q.dtype, k.dtype}`` / ``{t.dtype for t in (q, k, v)}`` (or a local assigned one): the names."""
    if isinstance(node, ast.Name) and fn is not None:
        values = _local_values(fn).get(node.id, [])
        return _dtype_set_names(values[0], None, params) if len(values) == 1 else []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "set" and node.args:
        node = node.args[0]
    if isinstance(node, ast.Set):
        names = [_dtype_owner(e) for e in node.elts]
        return [n for n in names if n in params] if all(names) else []
    if isinstance(node, (ast.SetComp, ast.GeneratorExp)) and len(node.generators) == 1:
        g = node.generators[0]
        if isinstance(g.target, ast.Name) and _dtype_owner(node.elt) == g.target.id \
                and isinstance(g.iter, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in g.iter.elts):
            return [e.id for e in g.iter.elts if e.id in params]
    return []


def _len_of_dtype_set(cmp: ast.Compare, params: set[str], fn=None) -> list[str]:
    """``len({q.dtype, k.dtype, v.dtype}) == 1`` / ``len(dtypes) != 1`` with ``dtypes = {t.dtype for t in ...}``."""
    left = cmp.left
    if not (isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" and left.args):
        return []
    right = cmp.comparators[0]
    if not (isinstance(right, ast.Constant) and right.value == 1):
        return []
    names = _dtype_set_names(left.args[0], fn, params)
    return names if len(set(names)) >= 2 else []


def _all_form(gen: ast.GeneratorExp, params: set[str]) -> list[str]:
    """``all(t.dtype == q.dtype for t in (k, v))``."""
    if len(gen.generators) != 1 or not isinstance(gen.generators[0].target, ast.Name):
        return []
    var = gen.generators[0].target.id
    it = gen.generators[0].iter
    if not isinstance(it, (ast.Tuple, ast.List)) or not all(isinstance(e, ast.Name) for e in it.elts):
        return []
    elt = gen.elt
    if not (isinstance(elt, ast.Compare) and len(elt.ops) == 1 and isinstance(elt.ops[0], ast.Eq)):
        return []
    sides = [_dtype_owner(elt.left), _dtype_owner(elt.comparators[0])]
    if var not in sides:
        return []
    other = sides[1] if sides[0] == var else sides[0]
    names = [e.id for e in it.elts] + ([other] if other else [])
    names = [n for n in names if n in params]
    return names if len(set(names)) >= 2 else []


def strict_params_of(fn) -> tuple[str, ...]:
    """Parameters whose dtypes the function itself asserts equal (it is a dtype-strict sink)."""
    if isinstance(fn, ast.Lambda):
        return ()
    hit = getattr(fn, "_dtl_strict", None)
    if hit is None:
        hit = fn._dtl_strict = _strict_params_of(fn)
    return hit


def _strict_params_of(fn) -> tuple[str, ...]:
    from dtypelint.analysis.fninfo import info

    params = set(_params(fn))
    found: list[str] = []
    for node in info(fn).checks:
        if isinstance(node, ast.Assert):
            test = node.test
        elif isinstance(node, ast.If):
            test = ast.UnaryOp(op=ast.Not(), operand=node.test)
        else:
            test = node.args[0]
        # `if q.dtype != k.dtype: raise` arrives as `not (q.dtype != k.dtype)`: any comparison of two
        # parameters' dtypes in a failure condition is an equality requirement
        found.extend(_equal_dtype_names(test, params, fn))
    return tuple(dict.fromkeys(found))


def param_source(expr: ast.AST | None, fn, params: set[str], depth: int = 0) -> str | None:
    """The parameter an argument expression is, up to shape-only ops and local renames."""
    if expr is None or depth > 4:
        return None
    if isinstance(expr, ast.Name):
        if expr.id in params:
            return expr.id
        values = _local_values(fn).get(expr.id, [])
        if len(values) == 1:
            return param_source(values[0], fn, params, depth + 1)
        return None
    if isinstance(expr, ast.Call):
        f = expr.func
        name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
        if name in SHAPE_ONLY:
            if isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name) and f.value.id not in params
                                                     and f.value.id not in _local_values(fn)):
                return param_source(f.value, fn, params, depth + 1)
            if expr.args:
                return param_source(expr.args[0], fn, params, depth + 1)
        return None
    if isinstance(expr, ast.Subscript):
        return param_source(expr.value, fn, params, depth + 1)
    return None


def _local_values(fn) -> dict[str, list[ast.AST]]:
    """Each local name's assigned expressions (cached on the function node: an id could be reused)."""
    out = getattr(fn, "_dtl_local_values", None)
    if out is None:
        out = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                out.setdefault(node.targets[0].id, []).append(node.value)
        fn._dtl_local_values = out
    return out


def call_bindings(call: ast.Call, callee) -> Iterable[tuple[str, ast.AST]]:
    """(callee parameter, argument expression) pairs of a call (positional and keyword)."""
    a = callee.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if i < len(positional):
            yield positional[i], arg
    for k in call.keywords:
        if k.arg:
            yield k.arg, k.value


def transitive_params(fn, resolve: Callable[[ast.AST], tuple | None], strict_of: Callable) -> tuple[str, ...]:
    """Direct strictness plus parameters passed on to strict parameters of resolved callees.

    ``resolve(call.func)`` gives ``(callee node, its FileAnalysis)`` or None; ``strict_of(callee, fa)`` the
    callee's own (transitive) strict parameters."""
    from dtypelint.analysis.fninfo import info

    found = list(strict_params_of(fn))
    params = set(_params(fn))
    for node in info(fn).calls:
        target = resolve(node.func)
        if target is None:
            continue
        callee, cfa = target
        if callee is fn:
            continue
        strict = strict_of(callee, cfa)
        if not strict:
            continue
        mapped = [param_source(arg, fn, params) for p, arg in call_bindings(node, callee) if p in strict]
        mapped = [m for m in mapped if m]
        if len(set(mapped)) >= 2:
            found.extend(mapped)
    return tuple(dict.fromkeys(found))
