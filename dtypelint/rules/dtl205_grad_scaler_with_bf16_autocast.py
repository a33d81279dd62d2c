"""DTL205 grad-scaler-with-bf16-autocast: loss scaling in a step whose autocast is bfloat16.

bfloat16 has float32's exponent range, so its gradients do not underflow where float16's do;
the scaler only adds an inf/NaN check and a host sync per step.
"""

from __future__ import annotations

from dtypelint.rules.base import Finding

CODE = "DTL205"
KINDS = ("amp-scaler",)
CONTEXT_CHECKED = False


def judge(e):
    d = e.detail
    fa = e.scope.fa
    region = d["region"]
    what = "a GradScaler" if d["made"] else f"`{e.scope.seg(e.node)}`"
    msg = (f"{what} scales the loss of a bfloat16 autocast step: bfloat16 has float32's exponent range, so "
           f"gradients do not underflow and the scaler only adds an inf check and a host sync per step")
    steps = (fa.step(region.call, f"`{e.scope.seg(region.call)}` runs the forward in bfloat16"),)
    return Finding(CODE, e, msg, steps, "loss scaling is not needed for bfloat16")
