"""DTL102 mixed-dtype-attention: SDPA, equal-dtype kernels and callees that assert equal dtypes."""

from __future__ import annotations

from dtypelint.rules.base import equal_dtypes

CODE = "DTL102"
KINDS = ("sdpa", "equal", "strict")
CONTEXT_CHECKED = True


def judge(e):
    if e.kind == "sdpa":
        if e.ac:
            return None  # autocast casts query, key and value to the low dtype
        return equal_dtypes(e, CODE, "which requires query, key and value to have the same dtype",
                            f"reaches `{e.sink}`, which requires query, key and value to have the same dtype (outside autocast)")
    if e.kind == "equal":
        return equal_dtypes(e, CODE, "which requires equal dtypes (autocast does not cast its inputs)",
                            f"reaches `{e.sink}`, which requires equal dtypes; autocast does not cast its inputs")
    labels = ", ".join(f"`{o.label}`" for o in e.operands)
    params = ", ".join(e.detail.get("params", ()))
    return equal_dtypes(e, CODE, f"which asserts that {labels} have equal dtypes",
                        f"reaches `{e.sink}`{e.detail.get('where', '')}, whose body asserts equal dtypes of {params}")
