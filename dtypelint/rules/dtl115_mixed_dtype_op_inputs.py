"""DTL115 mixed-dtype-op-inputs: ``F.grid_sample`` (input and grid) and ``embedding_bag`` (table and
``per_sample_weights``) with inputs of different dtypes, which raise (the API table's "equal-op" sinks)."""

from __future__ import annotations

from dtypelint.analysis.lattice import dtype_name
from dtypelint.rules.base import CLEAN, Finding, all_known

CODE = "DTL115"
KINDS = ("equal-op",)
CONTEXT_CHECKED = True
WIDTH = {"low": 1, "olp": 1, "fp32": 2, "fp64": 3}


def judge(e):
    if e.ac and e.detail.get("autocast") == "casts":
        return None  # autocast casts both inputs to one dtype (grid_sample: the widest)
    if len(e.operands) != 2:
        return None
    main, other = e.operands
    a, b = main.val, other.val
    if not (a.is_float and b.is_float) or a.zdim or b.zdim:
        return CLEAN if all_known(list(e.operands)) and a.kind != "unknown" and b.kind != "unknown" else None
    if a.kind == b.kind:
        return CLEAN
    cd = e.scope.compute
    an, bn = dtype_name(a.kind, cd), dtype_name(b.kind, cd)
    under = "autocast does not cast them" if not e.detail.get("autocast") else "outside autocast"
    msg = (f"`{main.label}` ({an}) and `{other.label}` ({bn}) reach `{e.sink}` in the {{regimes}}, which requires "
           f"them to have the same dtype ({under})")
    wide = a if WIDTH[a.kind] >= WIDTH[b.kind] else b
    return Finding(CODE, e, msg, wide.prov,
                   f"reaches `{e.sink}`, which raises when `{main.label}` and `{other.label}` differ in dtype", fix_for(e))


def fix_for(e):
    """Cast the second input (grid, per_sample_weights) to the first's dtype; for an op autocast runs in the
    widest dtype (grid_sample) with a narrower first input, cast that input up instead (a float16 grid loses
    sub-pixel precision) and the output back to its dtype, as CUDA autocast would compute it."""
    scope = e.scope
    main, other = e.operands
    a, b = main.val, other.val
    if WIDTH[b.kind] <= WIDTH[a.kind] or not e.detail.get("autocast"):
        # the second input is narrower, or the op is not autocast at all (embedding_bag: the weights take
        # the table's dtype, which the output has anyway): cast it to the first's dtype
        anchor = scope.anchor(main.node) if main.node is not None else None
        target = f"{scope.seg(anchor)}.dtype" if anchor is not None else (
            f"{scope.local_text(main.label)}.dtype" if main.node is None else None)
        if target is None or other.node is None:
            return None
        return ("safe", f"Cast `{other.label}` to `{target}`", [(other.node, "cast", target)])
    # the first input is narrower (a float16 image and a float32 grid): compute in the wider dtype, cast back
    anchor_o = scope.anchor(other.node) if other.node is not None else None
    anchor_m = scope.anchor(main.node) if main.node is not None else None
    if anchor_o is None or anchor_m is None:
        return None
    up, back = f"{scope.seg(anchor_o)}.dtype", f"{scope.seg(anchor_m)}.dtype"
    return ("unsafe", f"Cast `{main.label}` to `{up}` and the result back to `{back}`",
            [(main.node, "cast", up), (e.node, "cast", back)])
