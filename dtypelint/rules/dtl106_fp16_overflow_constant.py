"""DTL106 fp16-overflow-constant: a fill/clamp constant beyond the low-precision range (facts §3.1)."""

from __future__ import annotations

import ast

from dtypelint.analysis.constants import numeric_constant
from dtypelint.analysis.lattice import Step, dtype_name
from dtypelint.rules.base import Finding

CODE = "DTL106"
KINDS = ("fill",)
CONTEXT_CHECKED = False
FP16_MAX = 65504.0
BF16_MAX = 3.3895313892515355e38


def constant_value(node: ast.AST, names) -> float | None:
    """Numeric value of ``-1e9``, ``1e5``, ``torch.finfo(torch.float32).min`` (else None)."""
    if isinstance(node, ast.Call):
        return None  # `torch.tensor(-1e9)` as a fill value: not judged here
    return numeric_constant(node, names)


def judge(e):
    if e.detail["dest"].kind != "low":
        return None
    scope = e.scope
    fa = scope.fa
    op = e.detail["op"]
    dest_node = e.detail["dest_node"]
    limit = FP16_MAX if scope.compute == "float16" else BF16_MAX
    dname = dtype_name("low", scope.compute)
    for o in e.operands:
        value = constant_value(o.node, fa.names)
        if value is None or abs(value) <= limit or value != value or abs(value) == float("inf"):
            continue
        text = o.label
        anchor = scope.anchor(dest_node) if dest_node is not None else None
        fix = None
        if anchor is not None:
            repl = f"torch.finfo({scope.seg(anchor)}.dtype).{'min' if value < 0 else 'max'}"
            fix = ("unsafe", f"Use `{repl}`", [(o.node, "replace", repl)] + scope.import_torch_edit())
        what = f"`{op}`" if op != "full" else "`torch.full(..., dtype=...)`"
        msg = (f"`{text}` does not fit in {dname} (largest finite value {limit:g}); {what} on a {dname} tensor "
               f"in the {{regimes}} raises `value cannot be converted to type "
               f"{'c10::Half' if scope.compute == 'float16' else 'c10::BFloat16'} without overflow`")
        steps: tuple[Step, ...] = ()
        n = e.node
        if isinstance(dest_node, ast.Name):
            # where the destination got its (compute) dtype: its last assignment above the sink
            earlier = [v for v in scope.assignments().get(dest_node.id, ()) if v.lineno < n.lineno]
            if earlier:
                src_node = max(earlier, key=lambda v: (v.lineno, v.col_offset))
                how = "under CUDA autocast" if e.ac else f"in the {e.regime} regime"
                steps = (fa.step(src_node, f"`{dest_node.id} = {fa.seg(src_node)}` is {dname} {how}"),)
        if dest_node is not None and not steps:
            steps = (fa.step(dest_node, f"`{fa.seg(dest_node)}` is {dname} here"),)
        return Finding(CODE, e, msg, steps,
                       f"the constant reaches {what}, which converts it to {dname} with an overflow check", fix)
    return None
