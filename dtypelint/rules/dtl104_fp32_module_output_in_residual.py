"""DTL104 fp32-module-output-in-residual: a kept-fp32 module's output added to the low-precision residual."""

from __future__ import annotations

from dtypelint.rules.base import Finding

CODE = "DTL104"
KINDS = ("residual",)
CONTEXT_CHECKED = False


def judge(e):
    x, y = e.operands
    scope = e.scope
    msg = (f"`{x.label}` is float32 (output of `{x.val.kept}`, kept in float32) and is added to the "
           f"{scope.compute} residual `{y.label}` in the {{regimes}}: the residual stream becomes float32")
    fix = None
    ya = scope.anchor(y.node)
    if ya is not None and x.node is not None:
        fix = ("unsafe", f"Cast `{x.label}` back to `{scope.seg(ya)}.dtype` before the residual add",
               [(x.node, "cast", f"{scope.seg(ya)}.dtype")])
    return Finding(CODE, e, msg, x.val.prov,
                   "the float32 module output is added to the low-precision residual stream (fused norms expecting "
                   "the compute dtype fail downstream)", fix)
