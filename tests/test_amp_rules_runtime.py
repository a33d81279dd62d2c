"""Runtime proof for the AMP hygiene rules (DTL201-DTL205), on the CPU build of torch 2.13.

- DTL201: the fixed `torch.amp` spelling builds the same autocast / GradScaler state as the deprecated one and
  runs the same computation, without the FutureWarning.
- DTL202 / DTL205: the numbers behind the advice (float16 gradient underflow, bfloat16's range).
- DTL203: the fixture's `.half()` training loops raise `Attempting to unscale FP16 gradients.`; the twin runs.
- DTL204: binary cross-entropy inside CUDA autocast raises (fake CUDA, facts §0); the fixed logits form runs and
  computes the same loss as the sigmoid form for moderate logits.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from analysis_helpers import lint_text  # noqa: E402
from dtypelint.edits import apply_edit_groups  # noqa: E402
from dtypelint.source import SourceFile  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
UNSCALE_ERROR = "Attempting to unscale FP16 gradients."
BCE_ERROR = "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast."


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fixed_text(text: str, code: str) -> str:
    diags = [d for d in lint_text(text) if d.code == code]
    applicability = {"DTL201": "safe", "DTL204": "unsafe"}[code]  # DTL204's changes values where the call ran
    assert diags and all(d.fix is not None and d.fix.applicability == applicability for d in diags)
    fixed, _ = apply_edit_groups(SourceFile(text), [d.fix.edits for d in diags])
    assert [d for d in lint_text(fixed) if d.code == code] == []
    return fixed


def run_module(text: str) -> tuple[dict, list]:
    env: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(text, "snippet.py", "exec"), env)
    return env, [w for w in caught if issubclass(w.category, FutureWarning)]


LEGACY = '''
import torch
from torch.cpu.amp import GradScaler

torch.manual_seed(0)
layer = torch.nn.Linear(8, 8)
x = torch.randn(4, 8)


class Double(torch.autograd.Function):
    @staticmethod
    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, t):
        return t * 2

    @staticmethod
    @torch.cuda.amp.custom_bwd
    def backward(ctx, g):
        return g * 2


def run():
    with torch.cpu.amp.autocast(True, torch.bfloat16, False) as ctx:
        y = layer(x)
    cuda_ctx = torch.cuda.amp.autocast(dtype=torch.float16)
    scaler = GradScaler(2.0**10, growth_interval=7)
    legacy_cuda_scaler = torch.cuda.amp.GradScaler(enabled=False)
    return y, ctx, cuda_ctx, scaler, legacy_cuda_scaler, Double.apply(x)
'''


def state(obj) -> dict:
    keys = ("device", "fast_dtype", "_enabled", "_cache_enabled", "_device", "_init_scale", "_growth_factor",
            "_backoff_factor", "_growth_interval")
    return {k: getattr(obj, k) for k in keys if hasattr(obj, k)}


def test_dtl201_fix_builds_the_same_objects_and_results_without_the_warning():
    fixed = fixed_text(LEGACY, "DTL201")
    assert 'torch.amp.autocast("cpu", enabled=True, dtype=torch.bfloat16, cache_enabled=False)' in fixed
    assert '@torch.amp.custom_bwd(device_type="cuda")' in fixed
    old_env, old_warnings = run_module(LEGACY)
    new_env, _ = run_module(fixed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = old_env["run"]()
    old_warnings += [w for w in caught if issubclass(w.category, FutureWarning)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = new_env["run"]()
    assert len(old_warnings) >= 5  # every deprecated use warned
    assert not [w for w in caught if issubclass(w.category, FutureWarning)]
    assert old[0].dtype == new[0].dtype == torch.bfloat16
    assert torch.equal(old[0], new[0])
    for a, b in zip(old[1:5], new[1:5]):
        assert state(a) and state(a) == state(b)
    assert torch.equal(old[5], new[5])


def test_dtl202_fp16_gradients_underflow_without_a_scaler():
    torch.manual_seed(0)
    grads = {}
    for scaled in (False, True):
        layer = torch.nn.Linear(16, 16)
        with torch.autocast("cpu", dtype=torch.float16):
            out = layer(torch.randn(4, 16))
            loss = out.float().sum() * 1e-9  # a small loss: its gradient w.r.t. `out` is 1e-9
        if scaled:
            scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
            scaler.scale(loss).backward()
            scaler.unscale_(torch.optim.SGD(layer.parameters(), lr=0.1))
        else:
            loss.backward()
        grads[scaled] = layer.weight.grad
    assert torch.count_nonzero(grads[False]) == 0  # 1e-9 is below float16's smallest subnormal (~6e-8)
    assert torch.count_nonzero(grads[True]) == grads[True].numel()


def test_dtl205_bfloat16_keeps_float32_range():
    assert torch.tensor(1e-30, dtype=torch.float16).item() == 0.0
    assert torch.tensor(1e-30, dtype=torch.bfloat16).item() != 0.0
    assert torch.finfo(torch.bfloat16).tiny == pytest.approx(torch.finfo(torch.float32).tiny)


def test_dtl203_half_model_loops_raise_and_the_twin_runs():
    broken = load("dtl203_half_model_scaler")
    batches = [torch.randn(4, 16) for _ in range(2)]
    with pytest.raises(ValueError, match=UNSCALE_ERROR):
        broken.fit_half(batches)
    with pytest.raises(ValueError, match=UNSCALE_ERROR):
        broken.fit_converted_in_place(broken.TinyMLP(), batches)
    with pytest.raises(ValueError, match=UNSCALE_ERROR):
        broken.HalfTrainer(broken.TinyMLP()).train_step(batches[0])
    twin = load("dtl203_ok_autocast_model_scaler")
    twin.fit_autocast(batches)
    twin.fit_with_half_teacher(twin.TinyMLP(), twin.TinyMLP(), batches)
    assert twin.AutocastTrainer(twin.TinyMLP()).train_step(batches[0]).dtype == torch.float32


def _fake_cuda_autocast(monkeypatch):
    from torch._subclasses.fake_tensor import FakeTensorMode

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    return FakeTensorMode(allow_non_fake_inputs=True)


@pytest.mark.parametrize("step", ["multilabel_step", "mask_step"])
def test_dtl204_bce_inside_cuda_autocast_raises(step, monkeypatch):
    broken = load("dtl204_bce_under_autocast")
    with _fake_cuda_autocast(monkeypatch), torch.no_grad():
        x = torch.empty(8, 4, device="cuda")
        targets = torch.empty(8, 4, device="cuda")
        with pytest.raises(RuntimeError, match=BCE_ERROR.replace(".", r"\.")):
            if step == "multilabel_step":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    broken.multilabel_step(lambda t: t * 2, x, targets, None)
            else:
                broken.mask_step(lambda t: t * 2, x, targets)


def test_dtl204_twin_runs_under_fake_cuda_autocast(monkeypatch):
    twin = load("dtl204_ok_logits_losses")
    with _fake_cuda_autocast(monkeypatch), torch.no_grad():
        x = torch.empty(8, 4, device="cuda")
        targets = torch.empty(8, 4, device="cuda")
        assert twin.multilabel_step(lambda t: t * 2, x, targets, None).dtype == torch.float32


BCE_SNIPPET = '''
import torch
import torch.nn.functional as F


def loss_fn(model, x, y, w):
    with torch.autocast("cuda"):
        logits = model(x)
        return F.binary_cross_entropy(torch.sigmoid(logits), y, weight=w)
'''


def test_dtl204_fix_computes_the_same_loss_for_moderate_logits():
    fixed = fixed_text(BCE_SNIPPET, "DTL204")
    assert "F.binary_cross_entropy_with_logits(logits, y, weight=w)" in fixed
    old_env, _ = run_module(BCE_SNIPPET.replace('"cuda"', '"cpu", enabled=False'))
    new_env, _ = run_module(fixed.replace('"cuda"', '"cpu", enabled=False'))
    torch.manual_seed(0)
    x, y, w = torch.randn(256) * 4, torch.rand(256), torch.rand(256)
    old = old_env["loss_fn"](lambda t: t, x, y, w)
    new = new_env["loss_fn"](lambda t: t, x, y, w)
    assert torch.allclose(old, new, rtol=1e-5, atol=1e-6)
