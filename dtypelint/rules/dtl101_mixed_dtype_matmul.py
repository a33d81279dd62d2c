"""DTL101 mixed-dtype-matmul: a matmul-family op or a linear layer outside autocast with unequal dtypes."""

from __future__ import annotations

from dtypelint.rules.base import equal_dtypes

CODE = "DTL101"
KINDS = ("matmul",)
CONTEXT_CHECKED = True


def judge(e):
    if e.ac:
        return None  # autocast casts both operands to the low dtype
    module = e.detail.get("module")
    what = f"`{e.sink}`" if module is None else f"`{e.sink}` ({module})"
    return equal_dtypes(e, CODE, "which requires equal dtypes outside autocast",
                        f"reaches {what}, which requires equal dtypes outside autocast", module=module)
