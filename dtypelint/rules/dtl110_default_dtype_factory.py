"""DTL110 default-dtype-factory: a tensor made without ``dtype=`` in forward code promotes an activation."""

from __future__ import annotations

from dtypelint.rules.promotion import cast_at_use, finding, origin_operand

CODE = "DTL110"
KINDS = ("promote",)
CONTEXT_CHECKED = False


def judge(e):
    found = origin_operand(e, ("factory",))
    if found is None:
        return None
    wide, low = found
    fix = None
    h = wide.val.hint
    if h is not None and h[0] == "alloc" and h[3] == id(e.scope.fa):
        dt = h[2][0]
        call = h[1]
        arg = dt
        if dt.endswith(".dtype") and not any(k.arg == "device" for k in call.keywords):
            arg = f"{dt}, device={dt[:-len('.dtype')]}.device"
        fix = ("safe", f"Add `dtype={arg}` to `{e.scope.seg(call.func)}(...)`", [(call, "dtype", arg)])
    else:
        fix = cast_at_use(e, wide, low)
    return finding(CODE, e, wide, low, "made without `dtype=`, so in the default dtype",
                   "the default-dtype tensor promotes the activation to float32 (type promotion to the widest input)",
                   fix)
