"""DTL108 fp16-eps-underflow: an eps guard that rounds to zero in float16 (facts §5).

``x / (n + 1e-12)``, ``torch.rsqrt(var + 1e-12)``, ``torch.log(p.clamp(min=1e-10))``: in float16
the constant rounds to 0 (anything at or below 2**-25), so the guard does nothing and a zero
input gives inf, -inf or 0/0 = NaN.  Under CUDA autocast ``rsqrt``/``log`` run in float32, but
the guarded sum was already rounded to float16 before it, so the regime does not help.
"""

from __future__ import annotations

from dtypelint.analysis.lattice import dtype_name
from dtypelint.rules.base import CLEAN, Finding
from dtypelint.rules.dtl107_fp16_silent_inf_constant import is_fp16

CODE = "DTL108"
KINDS = ("eps",)
CONTEXT_CHECKED = False
FP16_ROUNDS_TO_ZERO = 2.0 ** -25  # half of the smallest subnormal: rounds (ties to even) to 0
ATOMS = ("Name", "Attribute", "Call", "Subscript")

CONSEQUENCE = {
    "/": "a zero denominator gives inf, and 0/0 gives NaN for an all-zero row",
    "rsqrt": "`rsqrt(0)` is inf, and NaN once it multiplies a zero row",
    "reciprocal": "`reciprocal(0)` is inf",
    "sqrt": "`sqrt(0)` has an infinite gradient, and dividing by it gives inf or NaN",
    "log": "`log(0)` is -inf", "log2": "`log2(0)` is -inf", "log10": "`log10(0)` is -inf",
}


def bound_before(scope, candidates: list[str], node) -> list[str]:
    """The dtype expressions whose name is bound above ``node`` (where the fix writes them)."""
    assigned = scope.assignments()
    return [c for c in candidates
            if not any(v.lineno >= node.lineno for v in assigned.get(c.split(".", 1)[0], ()))]


def judge(e):
    t, c = e.operands
    scope = e.scope
    value = e.detail["value"]
    if not is_fp16(t.val.kind, scope.compute) or value > FP16_ROUNDS_TO_ZERO:
        return CLEAN if t.val.is_tensor else None
    op = e.detail["op"]
    eps = scope.seg(c.node)
    base = scope.seg(t.node) if t.node is not None else "the value"
    guard = f"`{base} + {eps}`" if e.detail["form"] == "+" else f"`{base}` clamped at `{eps}`"
    sink = "`/`" if op == "/" else f"`{op}`"
    msg = (f"`{eps}` rounds to 0 in float16 (the smallest float16 value is 5.96e-08): {guard} is float16 in the "
           f"{{regimes}} and guards nothing before {sink}; {CONSEQUENCE.get(op, 'a zero input breaks it')}")
    anchor = scope.anchor(t.node) if t.node is not None else None
    via = e.detail.get("via")
    dtype = f"{scope.seg(anchor)}.dtype" if anchor is not None else next(
        iter(bound_before(scope, scope.dtype_in_scope(t.val.kind), via or c.node)), None)
    fix = None
    if dtype is not None:
        repl = f"max({eps}, torch.finfo({dtype}).tiny)"
        fix = ("unsafe", f"Use `{repl}` (float32 and bfloat16 keep `{eps}`)",
               [(c.node, "replace", repl)] + scope.import_torch_edit())
    steps = (scope.fa.step(c.node, f"`{eps}` is below float16's smallest value 5.96e-08 and rounds to 0"),)
    if via is not None:
        steps += (scope.fa.step(via, f"`{scope.seg(via)}` is {dtype_name(t.val.kind, scope.compute)}: `{eps}` is lost"),)
    return Finding(CODE, e, msg, steps, f"{sink} receives a float16 value whose eps rounded to 0", fix)
