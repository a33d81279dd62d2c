"""DTL112 fp32-island: the output of a module kept in float32 meets an activation."""

from __future__ import annotations

from dtypelint.rules.promotion import cast_at_use, finding, origin_operand

CODE = "DTL112"
KINDS = ("promote",)
CONTEXT_CHECKED = False


def judge(e):
    found = origin_operand(e, ("island",))
    if found is None:
        return None
    wide, low = found
    return finding(CODE, e, wide, low, "the output of a module built in float32",
                   "the float32 island's output meets a low-precision activation without a cast back",
                   cast_at_use(e, wide, low, "unsafe"))
