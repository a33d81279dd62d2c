"""DTL111 fp32-position-table: a float32 rotary / sinusoidal / timestep table applied to an activation."""

from __future__ import annotations

from dtypelint.rules import promotion

CODE = "DTL111"
KINDS = ("promote",)
CONTEXT_CHECKED = False


def judge(e):
    return promotion.judge(CODE, e, ("table",), "a position table built in float32",
                           "the float32 table is applied to the activation without a cast back: the activation "
                           "becomes float32", "safe")
