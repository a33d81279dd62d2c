"""DTL112 fp32-island: the output of a module kept in float32 meets a low-precision activation."""

from __future__ import annotations

from dtypelint.rules import promotion

CODE = "DTL112"
KINDS = ("promote",)
CONTEXT_CHECKED = False


def judge(e):
    return promotion.judge(CODE, e, ("island",), "the output of a module built in float32",
                           "the float32 island's output meets a low-precision activation without a cast back",
                           "unsafe")
