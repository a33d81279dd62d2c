"""What a rule returns for a sink event, and the equal-dtype judgement most rules share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dtypelint.analysis.events import Operand, SinkEvent
from dtypelint.analysis.interp.values import is_cast_unknown
from dtypelint.analysis.lattice import Step, dtype_name


class _Clean:
    """The sink was evaluated with every operand's dtype known and compatible."""

    def __repr__(self) -> str:
        return "CLEAN"


CLEAN = _Clean()


@dataclass
class Finding:
    code: str
    event: SinkEvent
    message: str  # with a {regimes} placeholder
    prov: tuple[Step, ...]  # the path from the source to just before the sink
    sink_step: str  # the last path step, at the sink
    fix: Any = None  # (applicability, title, [(node, kind, text)])


def all_known(ops: list[Operand]) -> bool:
    return bool(ops) and all(o.val.is_tensor or o.val.kind in ("scalar", "none") or is_cast_unknown(o.val) for o in ops)


def equal_dtypes(e: SinkEvent, code: str, why: str, sink_step: str, module: str | None = None):
    """Findings for an op whose floating operands must share one dtype (CLEAN / None when they do)."""
    from dtypelint.rules.fixes import cast_fix

    ops = list(e.operands)
    known = [o for o in ops if o.val.is_float and not o.val.zdim]
    kinds = {o.val.kind for o in known}
    if len(kinds) < 2:
        return CLEAN if all_known(ops) else None
    wide = max(known, key=lambda o: (o.val.kind in ("fp32", "fp64"), o.val.kind == "fp64", len(o.val.prov)))
    partner = next(o for o in known if o.val.kind != wide.val.kind)
    cd = e.scope.compute
    wn, pn = dtype_name(wide.val.kind, cd), dtype_name(partner.val.kind, cd)
    msg = f"`{wide.label}` ({wn}) and `{partner.label}` ({pn}) reach `{e.sink}` in the {{regimes}}, {why}"
    fix = cast_fix(e, [o for o in known if o.val.kind == wide.val.kind], partner, module)
    return Finding(code, e, msg, wide.val.prov, sink_step, fix)
