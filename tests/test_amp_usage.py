"""The AMP usage pass and the DTL201 rewrite on unusual spellings (argument forms, local imports, fallbacks)."""

from __future__ import annotations

from analysis_helpers import lint_text
from dtypelint.edits import apply_edit_groups
from dtypelint.source import SourceFile


def fixed(src: str, code: str = "DTL201") -> tuple[list[tuple[int, bool]], str]:
    diags = [d for d in lint_text(src) if d.code == code]
    out, _ = apply_edit_groups(SourceFile(src), [d.fix.edits for d in diags if d.fix])
    return [(d.start.row, d.fix is not None) for d in diags], out


def test_argument_forms_map_onto_the_new_signatures():
    src = '''import torch
from torch.cuda import amp


def f(kw, args, flag):
    a = torch.cuda.amp.autocast(**kw)
    b = torch.cuda.amp.autocast(*args)
    c = amp.autocast(flag, **kw)
    d = amp.GradScaler(
        # keep this comment
        init_scale=2.0 ** 8,
    )
    e = torch.cuda.amp.custom_fwd(f)
    g = [torch.cuda.amp.autocast]
    return a, b, c, d, e, g
'''
    rows, out = fixed(src)
    # `*args` has no known positions and a bare reference has no call: reported without a fix
    assert rows == [(6, True), (7, False), (8, True), (9, True), (13, True), (14, False)]
    assert 'a = torch.amp.autocast("cuda", **kw)' in out
    assert 'c = torch.amp.autocast("cuda", enabled=flag, **kw)' in out
    assert '        # keep this comment\n        "cuda", init_scale=2.0 ** 8,\n' in out
    assert 'e = torch.amp.custom_fwd(f, device_type="cuda")' in out
    compile(out, "fixed.py", "exec")


def test_function_local_import_and_missing_torch_binding():
    src = '''def step(model, x):
    from torch.cuda.amp import autocast

    with autocast():
        return model(x)
'''
    rows, out = fixed(src)
    assert rows == [(4, True)]
    assert out.startswith("import torch\n") and 'with torch.amp.autocast("cuda"):' in out


def test_fallback_for_older_torch_is_quiet_but_a_plain_use_next_to_it_is_not():
    src = '''import torch


def make_scaler(device):
    if hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler(device)
    else:
        scaler = torch.cuda.amp.GradScaler()
    return scaler


def make_autocast():
    return torch.cuda.amp.autocast()
'''
    rows, _ = fixed(src)
    assert rows == [(13, True)]


def test_training_step_events_need_the_loss_from_the_fp16_region():
    src = '''import torch


def step(model, x, other_loss):
    with torch.autocast("cuda", dtype=torch.float16):
        y = model(x)
    other_loss.backward()
    loss = y.float().mean() * 2
    loss.backward()
'''
    assert [(d.code, d.start.row) for d in lint_text(src)] == [("DTL202", 9)]


def test_nested_disabled_region_and_cpu_device_quiet_bce():
    src = '''import torch
import torch.nn.functional as F


def loss(model, x, y, device):
    with torch.autocast(device):
        p = model(x).sigmoid()
    with torch.autocast("cuda"):
        with torch.autocast("cuda", enabled=False):
            a = F.binary_cross_entropy(p.float(), y)
        b = F.binary_cross_entropy(p, y)
    with torch.autocast("cpu"):
        c = F.binary_cross_entropy(p, y)
    return a + b + c
'''
    assert [(d.code, d.start.row) for d in lint_text(src)] == [("DTL204", 11)]


def test_verify_skips_training_step_findings():
    """The verifier executes model code per regime; a regime-less training-step finding is listed as skipped."""
    from dtypelint.verify.command import VerifyOptions, plan_jobs

    (d,) = [d for d in lint_text("import torch\nscaler = torch.cuda.amp.GradScaler()\n") if d.code == "DTL201"]
    assert d.regimes == ()
    jobs, skipped = plan_jobs([d], {}, VerifyOptions(paths=()), "cpu", 1)
    assert jobs == [] and skipped == [d]


def test_bce_fix_spellings():
    src = '''from torch.nn.functional import binary_cross_entropy


def loss(model, x, y, w, autocast):
    import torch

    with torch.autocast("cuda"):
        a = binary_cross_entropy((model(x) + 1).sigmoid(), y, w)
        b = torch.nn.BCELoss(reduction="sum")(torch.special.expit(model(x)), y)
        p = torch.sigmoid(model(x))
        c = binary_cross_entropy(p, y)
    return a + b + c
'''
    rows, out = fixed(src, "DTL204")
    assert rows == [(8, True), (9, True), (11, False)]  # `p` is a sigmoid by name only: no fix
    assert out.startswith("import torch\n")
    assert "a = torch.nn.functional.binary_cross_entropy_with_logits(model(x) + 1, y, w)" in out
    assert 'b = torch.nn.BCEWithLogitsLoss(reduction="sum")(model(x), y)' in out
    compile(out, "fixed.py", "exec")
