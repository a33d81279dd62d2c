"""DTL203 grad-scaler-with-half-model: GradScaler stepping an optimizer over ``.half()`` parameters.

``GradScaler.unscale_`` (called by ``step``) refuses float16 gradients:
``ValueError: Attempting to unscale FP16 gradients.`` (torch 2.13, any device).
"""

from __future__ import annotations

from dtypelint.rules.base import Finding

CODE = "DTL203"
KINDS = ("amp-scaler-step",)
CONTEXT_CHECKED = False


def judge(e):
    d = e.detail
    fa = e.scope.fa
    conv = d["conversion"]
    msg = (f"`{e.scope.seg(e.node)}` unscales the float16 gradients of `{d['model']}` (converted by "
           f"`{e.scope.seg(conv)}`) and raises `ValueError: Attempting to unscale FP16 gradients.`; keep the model "
           f"float32 and run the forward under autocast")
    steps = (fa.step(conv, f"`{e.scope.seg(conv)}` makes the parameters, and so their gradients, float16"),
             fa.step(d["scaler_call"], f"`{e.scope.seg(d['scaler_call'])}` scales the loss"))
    return Finding(CODE, e, msg, steps, "`unscale_` checks the gradients' dtype and raises")
