"""The judgement DTL110-DTL113 share: an activation promoted to float32 by an elementwise op.

The interpreter emits a ``promote`` event where an elementwise op (``*``, ``+``, ``cat``,
``where``, ...) mixes a low-precision activation with a dim>=1 float32 operand.  The rules
differ only in where that float32 operand came from (the latest tagged step of its
provenance: a default-dtype factory, a position table, an fp32 module island, a softmax
computed in float32).  A promotion is a finding only when its result goes on in float32:
one that is cast back later (``.to(x.dtype)``, written into a low-precision tensor, fed to
an autocast matmul) is a deliberate fp32 island, one that reaches an equal-dtype sink (or
DTL104's residual add) is already that event's finding, and one whose trail the analysis
loses (an unknown callee) makes no claim.  It must be returned in float32 by an entry
function of model code (a module's forward or helper method): that is where the caller meets
it.

Promotions whose results are combined (``q * cos + rotate_half(q) * sin``) are one hazard:
one finding at the first of them, whose fix casts at every one (a fix at one site alone
would leave the value float32).
"""

from __future__ import annotations

import ast

from dtypelint.analysis.fates import last_origin
from dtypelint.analysis.lattice import dtype_name
from dtypelint.rules.base import Finding


def split(e):
    """(float32 operands, low-precision activation operands) of a ``promote`` event."""
    n = e.detail.get("wide", 1)
    return list(e.operands[:n]), list(e.operands[n:])


def in_model_code(e) -> bool:
    """The entry function whose analysis made the event is a method of a model class (one that
    defines ``forward`` or derives from ``nn.Module``): only there is the analysis' assumption that
    tensor parameters are low-precision activations sound.  A free function's or a data pipeline
    class's tensors may be positions, grids, labels or mixing weights."""
    fa = e.scope.fa
    cache = fa.__dict__.setdefault("_model_methods", {})
    if not cache:
        for node, facts in fa.classes.values():
            model = "forward" in facts.methods or any(b.endswith("nn.Module") or b.endswith("modules.module.Module")
                                                       for b in facts.bases)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    cache[id(item)] = model
        cache.setdefault(None, False)
    return cache.get(e.root, False)


def origin_operand(e, origins: tuple[str, ...]):
    """The float32 operand whose provenance starts at one of ``origins``, and the first activation;
    None unless the promoted result is returned in float32 by model code (see the module docstring)."""
    wides, lows = split(e)
    if not lows or e.scope.fa.fates.of(e.detail["step"]) != "escape" or not in_model_code(e):
        return None
    for w in wides:
        if w.node is not None and last_origin(w.val.prov) in origins:
            return w, lows[0]
    return None


def cast_at_use(e, wide, low):
    """Edits casting the float32 operand to the activation's dtype where it meets the activation."""
    scope = e.scope
    anchor = scope.anchor(low.node)
    if wide.node is None:
        return None
    if anchor is not None:
        target = f"{scope.seg(anchor)}.dtype"
    else:
        # `rotate_half(k) * sin`: prefer a tensor named inside the activation's expression (`k.dtype`)
        in_scope = scope.dtype_in_scope(low.val.kind)
        inside = [f"{n.id}.dtype" for n in ast.walk(low.node) if isinstance(n, ast.Name)]
        named = [t for t in inside if t in in_scope]
        if not in_scope:
            return None
        target = named[0] if named else in_scope[0]
    return f"Cast `{wide.label}` to `{target}` where it meets `{low.label}`", [(wide.node, "cast", target)]


def judge(code: str, e, origins: tuple[str, ...], what: str, sink_step: str, applicability: str,
          fix_for=cast_at_use):
    """The finding for a promotion of one of ``origins`` (None for the other members of its group)."""
    found = origin_operand(e, origins)
    if found is None:
        return None
    group = {id(g.node): g for g in e.scope.fa.fates.together(e.detail["step"])
             if origin_operand(g, origins) is not None}
    group[id(e.node)] = e
    members = sorted(group.values(), key=lambda g: (g.node.lineno, g.node.col_offset)) or [e]
    if members[0].node is not e.node:
        return None  # reported once, at the group's first promotion
    wide, low = found
    fixes = [fix_for(g, *origin_operand(g, origins)) for g in members]
    fix = None
    if all(f is not None for f in fixes):
        edits, seen = [], set()
        for _, items in fixes:
            for item in items:
                key = (id(item[0]), item[1], item[2])
                if key not in seen:
                    seen.add(key)
                    edits.append(item)
        titles = list(dict.fromkeys(t for t, _ in fixes))
        fix = (applicability, "; ".join(titles[:1]) + (f" (and {len(titles) - 1} more)" if len(titles) > 1 else ""),
               edits)
    cd = e.scope.compute
    wn, ln = dtype_name(wide.val.kind, cd), dtype_name(low.val.kind, cd)
    more = ""
    if len(members) > 1:
        def where(g) -> str:
            text = " ".join(e.scope.seg(g.node).split())
            text = text if len(text) <= 40 else text[:37] + "..."
            return f"`{text}`" + (f" (line {g.node.lineno})" if g.node.lineno != e.node.lineno else "")
        more = ", and the same value is promoted again at " + ", ".join(where(g) for g in members[1:4])
        more += f" and {len(members) - 4} more" if len(members) > 4 else ""
    msg = (f"`{wide.label}` ({wn}, {what}) meets the {ln} activation `{low.label}` at `{e.sink}` in the {{regimes}}"
           f"{more}: the result is promoted to {wn} and returned without a cast back (activation memory doubles "
           f"and the caller gets {wn})")
    return Finding(code, e, msg, wide.val.prov, sink_step, fix)
