"""DTL103 fp32-into-half-only-kernel: float32 reaching flash-attn, which accepts only fp16/bf16."""

from __future__ import annotations

from dtypelint.analysis.lattice import dtype_name
from dtypelint.rules.base import CLEAN, Finding, all_known
from dtypelint.rules.fixes import cast_fix

CODE = "DTL103"
KINDS = ("half-only",)
CONTEXT_CHECKED = True


def judge(e):
    ops = list(e.operands)
    wide = [o for o in ops if o.val.kind in ("fp32", "fp64") and not o.val.zdim]
    if not wide:
        return CLEAN if all_known(ops) and all(o.val.is_tensor or o.val.kind in ("scalar", "none") for o in ops) else None
    lows = [o for o in ops if o.val.kind in ("low", "olp")]
    w = max(wide, key=lambda o: len(o.val.prov))
    wn = dtype_name(w.val.kind, e.scope.compute)
    labels = ", ".join(f"`{o.label}`" for o in wide)
    msg = (f"{labels} {'is' if len(wide) == 1 else 'are'} {wn} at `{e.sink}` in the {{regimes}}, which accepts only "
           f"float16/bfloat16 inputs of one dtype (autocast does not cast its inputs)")
    fix = cast_fix(e, wide, lows[0], None) if lows else None
    return Finding(CODE, e, msg, w.val.prov,
                   f"reaches `{e.sink}`, which accepts only float16/bfloat16 (\"FlashAttention only support fp16 and bf16 data type\")",
                   fix)
