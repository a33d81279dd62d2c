"""DTL107 fp16-silent-inf-constant: a constant beyond float16's range that becomes ``-inf`` without an error.

``torch.where(m, x, -1e9)``, ``x + (-1e9)``, ``(1 - mask) * -1e9`` and ``torch.tensor(-1e9, dtype=...)``
run no overflow check (facts §3.1): the value rounds to ``-inf`` in float16, and a fully masked
softmax row of ``-inf`` is NaN.  The checked forms (``masked_fill``, ``fill_``, ``full``, ``clamp``)
raise instead and are DTL106.
"""

from __future__ import annotations

import ast

from dtypelint.analysis.constants import FP16_MAX
from dtypelint.analysis.lattice import dtype_name
from dtypelint.rules.base import CLEAN, Finding

CODE = "DTL107"
KINDS = ("constant",)
CONTEXT_CHECKED = False


def is_fp16(kind: str, compute: str) -> bool:
    """``low`` is the compute dtype; ``olp`` the other low-precision dtype."""
    return (kind == "low" and compute == "float16") or (kind == "olp" and compute == "bfloat16")


def cast_target(scope, call: ast.Call) -> str | None:
    """The dtype a narrowing cast names: ``.to(x.dtype)`` / ``.to(dtype=d)`` -> its text, ``.half()`` ->
    ``torch.float16``, ``.type_as(y)`` -> ``y.dtype``."""
    meth = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if meth == "half":
        return "torch.float16"
    if meth == "bfloat16":
        return "torch.bfloat16"
    arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "dtype"), None)
    if arg is None or not isinstance(arg, (ast.Name, ast.Attribute)):
        return None
    text = scope.seg(arg)
    if meth == "type_as":
        return f"{text}.dtype"
    if meth == "to" and (isinstance(arg, ast.Name) or arg.attr == "dtype" or text.startswith("torch.")):
        return text
    return None


def bound_at(scope, text: str, node: ast.AST) -> bool:
    """``text``'s leading name is bound above ``node``: a module name, a parameter or an earlier assignment."""
    head = text.split(".", 1)[0]
    if head in scope.fa.names.aliases:
        return True
    return head in scope.parameters() or any(v.lineno < node.lineno for v in scope.assignments().get(head, ()))


def judge(e):
    t, c = e.operands
    scope = e.scope
    if not is_fp16(t.val.kind, scope.compute):
        return CLEAN if t.val.is_tensor else None
    value = e.detail["value"]
    op = e.detail["op"]
    inf = "-inf" if value < 0 else "inf"
    text = scope.seg(c.node)
    whole = scope.seg(e.node)
    if op == "*":
        where = f"`{whole}` is float16 and every element whose factor is not tiny (a 0/1 mask's ones) becomes `{inf}`"
    elif op in ("+", "-"):
        where = f"`{whole}` is float16 and every element becomes `{inf}`"
    elif op.endswith("where"):
        where = f"`{whole}` stays float16 and every selected `{text}` becomes `{inf}`"
    elif op == ".to":
        where = f"`{whole}` rounds the float32 tensor filled with `{text}` to float16, where it holds `{inf}`"
    else:
        where = f"`{whole}` creates a float16 tensor holding `{inf}`"
    msg = (f"`{text}` does not fit in float16 (largest finite value {FP16_MAX:g}) and silently becomes `{inf}` "
           f"in the {{regimes}}: {where}; a softmax over a fully masked row then gives NaN")
    fix = None
    anchor = scope.anchor(t.node) if t.node is not None else None
    dtype = f"{scope.seg(anchor)}.dtype" if anchor is not None else next(iter(scope.dtype_in_scope(t.val.kind)), None)
    dtype_node = e.detail.get("dtype_node")
    if t.node is None and dtype_node is not None:  # torch.tensor(c, dtype=d) / x.new_tensor(c)
        dtype = ast.unparse(dtype_node) if not hasattr(dtype_node, "lineno") else scope.seg(dtype_node)
    if dtype is not None and not isinstance(c.node, ast.Call):
        repl = f"torch.finfo({dtype}).{'min' if value < 0 else 'max'}"
        fix = ("unsafe", f"Use `{repl}`", [(c.node, "replace", repl)] + scope.import_torch_edit())
    if op == ".to":
        # the constant is written where the float32 mask is built: `torch.finfo(<cast target>).min` there
        target = cast_target(scope, e.node)
        fix = None
        if target is not None and not isinstance(c.node, ast.Call) and bound_at(scope, target, c.node):
            repl = f"torch.finfo({target}).{'min' if value < 0 else 'max'}"
            fix = ("unsafe", f"Use `{repl}`", [(c.node, "replace", repl)] + scope.import_torch_edit())
    steps = ()
    via = e.detail.get("via")
    if via is not None:
        steps = (scope.fa.step(via, f"`{scope.seg(via)}` is float32 and holds `{text}`"),)
    elif t.node is not None and t.val.prov:
        steps = t.val.prov
    elif t.node is not None:
        how = "under CUDA autocast" if e.ac else f"in the {e.regime} regime"
        steps = (scope.fa.step(t.node, f"`{scope.seg(t.node)}` is {dtype_name(t.val.kind, scope.compute)} {how}"),)
    if not steps:
        steps = (scope.fa.step(c.node, f"`{text}` is beyond float16's largest value {FP16_MAX:g}"),)
    return Finding(CODE, e, msg, steps, f"`{text}` is rounded to float16 here without an overflow check", fix)
