"""DTL110 default-dtype-factory: a tensor made without ``dtype=`` in forward code promotes an activation."""

from __future__ import annotations

from dtypelint.rules import promotion

CODE = "DTL110"
KINDS = ("promote",)
CONTEXT_CHECKED = False


def add_dtype(e, wide, low):
    """``dtype=<activation>.dtype`` (and ``device=`` when the call names none) on the factory, where an
    activation's dtype was in scope at the call; otherwise a cast where the tensor meets the activation."""
    h = wide.val.hint
    if h is None or h[0] != "alloc" or h[3] != id(e.scope.fa):
        return promotion.cast_at_use(e, wide, low)
    dt, call = h[2][0], h[1]
    arg = dt
    if dt.endswith(".dtype") and not any(k.arg == "device" for k in call.keywords):
        arg = f"{dt}, device={dt[:-len('.dtype')]}.device"
    return f"Add `dtype={arg}` to `{e.scope.seg(call.func)}(...)`", [(call, "dtype", arg)]


def judge(e):
    return promotion.judge(CODE, e, ("factory",), "made without `dtype=`, so in the default dtype",
                           "the default-dtype tensor promotes the activation to float32 (type promotion to the "
                           "widest input)", "safe", add_dtype)
