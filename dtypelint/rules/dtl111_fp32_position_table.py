"""DTL111 fp32-position-table: a float32 rotary / sinusoidal / timestep table applied to an activation."""

from __future__ import annotations

from dtypelint.rules.promotion import cast_at_use, finding, origin_operand

CODE = "DTL111"
KINDS = ("promote",)
CONTEXT_CHECKED = False


def judge(e):
    found = origin_operand(e, ("table",))
    if found is None:
        return None
    wide, low = found
    return finding(CODE, e, wide, low, "a position table built in float32",
                   "the float32 table is applied to the activation without a cast back: the activation becomes float32",
                   cast_at_use(e, wide, low))
