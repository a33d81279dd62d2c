"""DTL201 deprecated-amp-api: ``torch.cuda.amp`` / ``torch.cpu.amp`` names -> ``torch.amp`` with a device.

torch 2.13 keeps the old names as thin deprecated wrappers that emit a ``FutureWarning``;
each forwards to the ``torch.amp`` object with its device fixed, so the rewrite names the
device and maps positional arguments to the new signature's keywords.
"""

from __future__ import annotations

import ast

from dtypelint.rules.base import Finding

CODE = "DTL201"
KINDS = ("amp-api",)
CONTEXT_CHECKED = False
# the old autocast wrappers' positional parameters (the new one takes device_type first, then dtype)
AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")


def judge(e):
    d = e.detail
    label = e.scope.seg(e.node)
    new = f"torch.amp.{d['new']}"
    spelled = f"`{label}`" if label == d["qname"] else f"`{label}` (`{d['qname']}`)"
    if d["new"] in ("custom_fwd", "custom_bwd"):
        instead = f"`{new}(..., device_type=\"{d['device']}\")`"
    else:
        instead = f"`{new}(\"{d['device']}\", ...)`"
    msg = f"{spelled} is deprecated (torch warns `FutureWarning` on each use); use {instead}"
    return Finding(CODE, e, msg, (), f"deprecated `{d['qname']}`", fix(e, new))


def fix(e, new: str):
    d = e.detail
    call: ast.Call | None = d["call"]
    device = d["device"]
    edits = rewrite(call, e.node, d["new"], new, device, d["decorator"])
    if not edits:
        return None
    return ("safe", f"Use `{new}` with device \"{device}\"", edits + e.scope.import_torch_edit())


def rewrite(call, node, name: str, new: str, device: str, decorator: bool):
    """Edits turning the old spelling into the ``torch.amp`` one (None when it cannot be spelled)."""
    dev = f'"{device}"'
    if call is None:
        if decorator and name in ("custom_fwd", "custom_bwd"):
            return [(node, "replace", f"{new}(device_type={dev})")]
        return None  # a bare reference (`ctx = torch.cuda.amp.autocast`): no call to give the device to
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None  # positions unknown
    if not call.args and not call.keywords:
        inner = f"device_type={dev}" if name in ("custom_fwd", "custom_bwd") else dev
        return [(call, "replace", f"{new}({inner})")]
    edits = [(node, "replace", new)]
    if name in ("custom_fwd", "custom_bwd"):
        if call.keywords:
            edits.append((call.keywords[0], "before", f"device_type={dev}, "))
        else:
            edits.append((call.args[-1], "after", f", device_type={dev}"))
        return edits
    if name == "autocast":
        if len(call.args) > len(AUTOCAST_PARAMS):
            return None
        first = call.args[0] if call.args else call.keywords[0]
        for i, a in enumerate(call.args):
            text = f"{AUTOCAST_PARAMS[i]}="
            edits.append((a, "before", f"{dev}, {text}" if i == 0 else text))
        if not call.args:
            edits.append((first, "before", f"{dev}, "))
        return edits
    # GradScaler: the new signature is the old one with `device` first
    first = call.args[0] if call.args else call.keywords[0]
    edits.append((first, "before", f"{dev}, "))
    return edits
