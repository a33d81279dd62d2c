"""DTL113 fp32-softmax-meets-low: softmax computed in float32 meets a low-precision activation."""

from __future__ import annotations

from dtypelint.rules import promotion

CODE = "DTL113"
KINDS = ("promote",)
CONTEXT_CHECKED = False


def judge(e):
    return promotion.judge(CODE, e, ("softmax",), "a softmax computed in float32",
                           "the float32 softmax meets a low-precision activation without a cast back", "safe")
