"""DTL202 fp16-backward-without-grad-scaler: a float16 autocast step whose backward is not scaled.

float16 gradients below about 6e-8 flush to zero (facts §5); GradScaler multiplies the loss
before ``backward`` so they stay representable, then unscales before the optimizer step.
"""

from __future__ import annotations

from dtypelint.rules.base import Finding

CODE = "DTL202"
KINDS = ("amp-backward",)
CONTEXT_CHECKED = False


def judge(e):
    d = e.detail
    if d["scaled"]:
        return None
    fa = e.scope.fa
    region = d["region"]
    label = e.scope.seg(e.node)
    msg = (f"`{label}` back-propagates a loss computed under float16 autocast without a GradScaler: gradients "
           f"smaller than float16's tiniest subnormal (about 6e-8) become zero and those weights stop learning")
    steps = (fa.step(region.call, f"`{e.scope.seg(region.call)}` runs the forward in float16"),)
    return Finding(CODE, e, msg, steps, "the unscaled backward produces float16 gradients")
