"""How findings are fixed: a cast at the sink (safe) or at the float32 source (unsafe).

A cast at the sink changes only the op's input.  A fix at the source — casting an fp32
parameter where it is used, casting a norm or rotary output back, giving an allocation
``dtype=`` — also changes every later use of that value, so it is offered as unsafe,
with the sink cast named as the safe alternative.  Edits are ``(node, kind, text)``
triples that ``render.build_fix`` turns into text edits.
"""

from __future__ import annotations

from dtypelint.analysis.events import Operand, SinkEvent


def cast_fix(e: SinkEvent, wides: list[Operand], partner: Operand, module: str | None):
    scope = e.scope
    if partner.node is None and module is None:
        return None
    if module is not None:
        # linear module: cast the input to the weight dtype (the T5 `wo` guard style)
        inp = next((o for o in [*wides, partner] if o.node is not None), None)
        wt = next((o for o in [*wides, partner] if o.node is None), None)
        if inp is None or wt is None:
            return None
        wlabel = scope.local_text(wt.label)
        sink_fix = ("safe", f"Cast `{inp.label}` to `{wlabel}.dtype`", [(inp.node, "cast", f"{wlabel}.dtype")])
        h = inp.val.hint
        if inp.val.kind in ("fp32", "fp64") and wt.val.kind == "low" and h is not None and h[3] == id(scope.fa):
            return source_fix(scope, [h], None, sink_fix[1])
        return sink_fix
    anchor = scope.anchor(partner.node)
    # the dtype the sink casts to: one captured before the promotion (`dtype = qkv.dtype`), else the partner's
    captured = [c for c in scope.dtype_in_scope(partner.val.kind) if "." not in c] if partner.val.kind == "low" else []
    target = captured[0] if captured else (f"{scope.seg(anchor)}.dtype" if anchor is not None else None)
    sink_edits, sources, seen = [], [], set()
    for o in wides:
        if o.node is None:
            return None
        sink_edits.append((o.node, "cast", target))
        h = o.val.hint
        if h is not None and h[3] == id(scope.fa):
            if id(h[1]) not in seen:
                seen.add(id(h[1]))
                sources.append(h)
        else:
            sources.append(None)
    labels = ", ".join(f"`{scope.seg(o.node)}`" for o in wides)
    how = "captured before the promotion" if captured else "where it reaches the sink"
    sink_title = f"Cast {labels} to `{target}` {how}" if target else ""
    if sources and all(h is not None for h in sources):
        return source_fix(scope, sources, target, sink_title)
    if target is None:
        return None
    return ("safe", sink_title, sink_edits)


def source_fix(scope, sources: list, target: str | None, sink_title: str):
    """The fix at the fp32 source(s): cast the operand where it is used, cast a norm/rotary output
    back, or add `dtype=` to an allocation (unsafe: every later use of the value changes dtype)."""
    edits: list = []
    titles = []
    for style, node, arg, _ in sources:
        if style == "operand":
            titles.append(f"cast `{scope.seg(node)}` to `{arg}` where it is used")
            edits.append((node, "cast", arg))
        elif style == "output":
            titles.append(f"cast the output of `{scope.seg(node.func)}(...)` back to `{arg}`")
            edits.append((node, "cast", arg))
        else:
            dt = target if target is not None and target in arg else arg[0]
            titles.append(f"add `dtype={dt}` to `{scope.seg(node.func)}(...)`")
            edits.append((node, "dtype", dt))
    title = "; ".join(t if titles.count(t) == 1 else f"{t} ({titles.count(t)} sites)"
                      for i, t in enumerate(titles) if t not in titles[:i])
    alt = f"; alternative, safe: {sink_title[0].lower() + sink_title[1:]}" if sink_title else ""
    title = title[0].upper() + title[1:] + f" (at the fp32 source{alt})"
    return ("unsafe", title, edits)
