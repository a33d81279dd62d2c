"""DTL113 fp32-softmax-meets-low: softmax computed in float32 meets a low-precision activation."""

from __future__ import annotations

from dtypelint.rules.promotion import cast_at_use, finding, origin_operand

CODE = "DTL113"
KINDS = ("promote",)
CONTEXT_CHECKED = False


def judge(e):
    found = origin_operand(e, ("softmax",))
    if found is None:
        return None
    wide, low = found
    return finding(CODE, e, wide, low, "a softmax computed in float32",
                   "the float32 softmax meets a low-precision activation without a cast back",
                   cast_at_use(e, wide, low))
