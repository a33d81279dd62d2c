"""Numeric constants written in the source, for the fp16 range checks (facts §3.1, §5).

The interpreter tracks dtypes, not values; the range rules only need the few constants
that are spelled where they are used: a literal (``-1e9``, ``1e-12``), ``float("-inf")``,
``torch.finfo(torch.float32).min`` and ``torch.tensor(-1e9)``.
"""

from __future__ import annotations

import ast

from dtypelint.analysis.module_facts import dtype_of_expr

FP16_MAX = 65504.0  # largest finite float16 (facts §5)
FP16_TINY = 6.103515625e-05  # smallest normal float16 (finfo.tiny)
WIDE_RANGE = {"fp32": 3.4028234663852886e38, "fp64": 1.7976931348623157e308}


def numeric_constant(node: ast.AST | None, names) -> float | None:
    """The value of a constant expression the range rules understand (else None)."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = numeric_constant(node.operand, names)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.Attribute) and node.attr in ("min", "max") and isinstance(node.value, ast.Call):
        call = node.value
        if names.qualify(call.func) == "torch.finfo" and call.args:
            big = WIDE_RANGE.get(dtype_of_expr(call.args[0], names) or "")
            if big is not None:
                return -big if node.attr == "min" else big
    if isinstance(node, ast.Call) and node.args and len(node.args) == 1:
        q = names.qualify(node.func)
        if q == "torch.tensor" and not any(k.arg == "dtype" for k in node.keywords):
            return numeric_constant(node.args[0], names)  # a 0-dim float32 tensor: never promotes lp (facts §2.1)
    return None


def beyond_fp16(value: float | None) -> bool:
    """Finite and beyond float16's largest value: it cannot be written into a float16 tensor as it is."""
    return value is not None and value == value and abs(value) != float("inf") and abs(value) > FP16_MAX


def below_fp16_normal(value: float | None) -> bool:
    """A positive constant below float16's smallest normal value (an eps float16 may not hold)."""
    return value is not None and 0 < value < FP16_TINY
