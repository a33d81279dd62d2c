"""DTL109 fp16-reduction-overflow: squares summed, or a variance computed, in float16 (facts §5).

``x.pow(2).mean(-1)``, ``(x * x).sum()``, ``x.square().mean()`` and ``x.var()`` of float16
activations overflow as soon as one |x| passes 256 (256**2 > 65504) or the variance passes
65504: the result is inf and the normalised output NaN or 0.  This is why RMSNorm upcasts
first.  Under CUDA autocast ``pow``/``square``/``**`` run in float32 (facts §1.2-§1.3), so those
forms are fine there; ``x * x`` and ``var`` are not on the list and overflow in every regime.
"""

from __future__ import annotations

import ast

from dtypelint.rules.base import CLEAN, Finding
from dtypelint.rules.dtl107_fp16_silent_inf_constant import is_fp16

CODE = "DTL109"
KINDS = ("reduction",)
CONTEXT_CHECKED = False
ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


def upcast(scope, node: ast.AST) -> str:
    text = scope.seg(node)
    return f"{text}.float()" if isinstance(node, ATOMS) else f"({text}).float()"


VIEWS = ("t", "transpose", "permute", "reshape", "view", "flatten", "unsqueeze", "squeeze", "contiguous", "detach")
NORMALIZE = ("torch.nn.functional.normalize",)


def bounded(scope, node: ast.AST, before: int, depth: int = 0) -> bool:
    """Elements that cannot pass 256: a parameter or buffer of the module (``self.codebook.weight``: trained
    weights are O(1)) or a unit-normalised value (``F.normalize(z)``), directly, through views, or through a
    local name assigned from one."""
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEWS:
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
            node = node.value
        else:
            break
    if isinstance(node, ast.Call) and scope.fa.names.qualify(node.func) in NORMALIZE:
        return True
    if isinstance(node, ast.Attribute):
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id == "self"
    if isinstance(node, ast.Name) and depth < 3:
        defs = [d for d in scope.assignments().get(node.id, ()) if d.lineno < before]
        if defs:
            last = max(defs, key=lambda d: (d.lineno, d.col_offset))
            return bounded(scope, last, last.lineno, depth + 1)
    return False


def judge(e):
    (x,) = e.operands
    scope = e.scope
    if not is_fp16(x.val.kind, scope.compute):
        return CLEAN if x.val.is_tensor else None
    if e.detail["square"] is not None and all(bounded(scope, b, e.node.lineno) for b in e.detail["bases"]):
        return None
    op = e.detail["op"]
    whole = scope.seg(e.node)
    if e.detail["square"] is None:
        msg = (f"`{whole}` computes the variance in float16 in the {{regimes}}: a variance above 65504 "
               f"(a standard deviation above 256) becomes inf; compute it in float32")
        step = f"`{op}` returns float16 and overflows for activations with a spread above 256"
    else:
        total = (" and squares that add up past 65504 (1024 values of 8) make the sum inf too"
                 if op in ("sum", "nansum") else "")
        msg = (f"`{whole}` sums squares in float16 in the {{regimes}}: any element above 256 in magnitude squares "
               f"past 65504 (float16's largest value) to inf, so the `{op}` is inf{total}; square in float32")
        step = f"the squares reach `{op}` as float16"
    bases = e.detail["bases"]
    edits = [(b, "replace", upcast(scope, b)) for b in bases]
    fix = ("unsafe", "Square in float32 (`.float()` before squaring); cast the normalised result back "
           "to the input dtype", edits)
    first = bases[0]
    source = (scope.fa.step(first, f"`{scope.seg(first)}` is float16 here"),) if hasattr(first, "lineno") else ()
    return Finding(CODE, e, msg, source, step, fix)
