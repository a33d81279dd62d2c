"""DTL105 mixed-dtype-index-put: index_put / index_copy / scatter / lerp with a source of another dtype."""

from __future__ import annotations

from dtypelint.analysis.lattice import dtype_name
from dtypelint.rules.base import Finding

CODE = "DTL105"
KINDS = ("index",)
CONTEXT_CHECKED = True


def judge(e):
    dest, src = e.operands
    if not e.detail.get("raises", True):
        return None
    d, s = dest.val, src.val
    if not (d.is_float and s.is_float and d.kind != s.kind) or (e.detail.get("lerp") and s.zdim):
        return None
    scope = e.scope
    cd = scope.compute
    dn, sn = dtype_name(d.kind, cd), dtype_name(s.kind, cd)
    slabel = f"`{src.label}`" if src.node is not None else src.label
    what = e.detail.get("what", "")
    msg = (f"{slabel} ({sn}) is written into `{dest.label}` ({dn}) by {what} in the {{regimes}}, which requires "
           f"the source and destination dtypes to match, even under autocast")
    prov = s.prov if s.kind in ("fp32", "fp64") else d.prov
    fix = None
    anchor = scope.anchor(dest.node)
    if src.node is not None and anchor is not None:
        fix = ("safe", f"Cast `{src.label}` to `{scope.seg(anchor)}.dtype`", [(src.node, "cast", f"{scope.seg(anchor)}.dtype")])
    return Finding(CODE, e, msg, prov, f"reaches {what}, which requires equal source and destination dtypes", fix)
