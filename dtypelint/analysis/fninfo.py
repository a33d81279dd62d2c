"""Static facts of one function body, gathered in a single walk and cached on the node.

Several parts of the analysis ask the same questions of a function many times (which
names it assigns, which names it tests, whether it can make a tensor, which calls it
makes, which statements assert dtypes): one walk answers them all.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# calls that make a floating tensor out of no tensor argument, or cast one (a callee without tensor
# arguments matters only through what it returns, and it returns a dtype only if it makes or casts one)
MAKES_TENSORS = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "arange", "linspace", "logspace",
                           "tensor", "as_tensor", "eye", "float", "double", "half", "bfloat16", "to", "type",
                           "from_numpy", "stack", "cat", "zeros_like", "ones_like", "empty_like", "full_like",
                           "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "Parameter"})


@dataclass
class FnInfo:
    assignments: dict[str, list[ast.AST]] = field(default_factory=dict)  # local name -> assigned expressions
    decisions: frozenset = frozenset()  # names that appear in tests (if / while / a if c else b / assert)
    calls: list[ast.Call] = field(default_factory=list)
    checks: list[ast.AST] = field(default_factory=list)  # assert / `if ...: raise` / torch._assert nodes
    makes_tensors: bool = False
    has_matmul: bool = False
    first_param_attrs: bool = False  # `self.x` is used (a method that reads its module)


def info(fn: ast.AST) -> FnInfo:
    hit = getattr(fn, "_dtl_info", None)
    if hit is not None:
        return hit
    out = FnInfo()
    args = getattr(fn, "args", None)
    positional = (list(args.posonlyargs) + list(args.args)) if args is not None else []
    me = positional[0].arg if positional else None
    decisions: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            out.calls.append(node)
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else (f.id if isinstance(f, ast.Name) else "")
            if name in MAKES_TENSORS:
                out.makes_tensors = True
            if name == "_assert" and node.args:
                out.checks.append(node)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            if node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for nm in ast.walk(t):
                        if isinstance(nm, ast.Name):
                            out.assignments.setdefault(nm.id, []).append(node.value)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            out.has_matmul = True
        elif isinstance(node, ast.Attribute) and me is not None and isinstance(node.value, ast.Name) \
                and node.value.id == me:
            out.first_param_attrs = True
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            decisions.update(n.id for n in ast.walk(node.test) if isinstance(n, ast.Name))
            if isinstance(node, ast.Assert) or (isinstance(node, ast.If) and node.body
                                                and isinstance(node.body[0], ast.Raise)):
                out.checks.append(node)
    out.decisions = frozenset(decisions)
    try:
        fn._dtl_info = out
    except AttributeError:  # pragma: no cover - every ast node takes attributes
        pass
    return out
