"""DTL204 bce-under-autocast: ``F.binary_cross_entropy`` / ``nn.BCELoss`` inside CUDA autocast.

CUDA autocast bans ``binary_cross_entropy`` (facts §1.1, §1.2): the call raises
``torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.``
The logits form is autocast-safe (run in float32) and numerically stable.
"""

from __future__ import annotations

import ast

from dtypelint.rules.base import Finding

CODE = "DTL204"
KINDS = ("amp-loss",)
CONTEXT_CHECKED = False
ERROR = "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast."


def judge(e):
    d = e.detail
    region = d["region"]
    if region.device not in (None, "cuda"):
        return None  # CPU autocast runs BCE in float32
    fa = e.scope.fa
    where = "CUDA autocast" if region.device == "cuda" else "autocast (on CUDA)"
    what = "`F.binary_cross_entropy`" if d["function"] else "`nn.BCELoss`"
    msg = (f"{what} inside {where} raises `RuntimeError: {ERROR}`; use the logits form "
           f"(`binary_cross_entropy_with_logits` / `BCEWithLogitsLoss`) on the pre-sigmoid values")
    steps = (fa.step(region.call, f"`{e.scope.seg(region.call)}` opens the autocast region"),)
    return Finding(CODE, e, msg, steps, "autocast's ban on binary_cross_entropy raises here", fix(e))


def fix(e):
    """Safe when the input is literally a sigmoid: drop it and call the logits form."""
    d = e.detail
    logits = d["logits"]
    call: ast.Call = e.node
    if logits is None:
        return None
    scope = e.scope
    arg = call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "input")
    imports: list = []
    if d["function"]:
        target, name = call.func, "binary_cross_entropy_with_logits"
        qualified = "torch.nn.functional." + name
    elif d["inline_module"]:
        target, name = call.func.func, "BCEWithLogitsLoss"
        qualified = "torch.nn." + name
    else:
        return None  # a criterion built elsewhere: changing it changes its other uses
    if isinstance(target, ast.Attribute):
        new = f"{scope.source(target.value)}.{name}"
    else:
        new, imports = qualified, scope.import_torch_edit()
    inner = scope.source(logits)
    if isinstance(logits, (ast.NamedExpr, ast.GeneratorExp)):
        inner = f"({inner})"  # not a valid bare argument next to others
    edits = [(target, "replace", new), (arg, "replace", inner)] + imports
    return ("unsafe", f"Use `{name}` on the logits (drop the sigmoid)", edits)
