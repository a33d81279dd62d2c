"""The verifier on model files it has never seen, with findings written by hand.

Each test writes a small project, states a finding the way ``check`` would report it (code,
position, regimes, dataflow path, fix edits) and runs the per-module verification in this
process.  The findings do not come from the analysis, so these tests pin the verifier's
behaviour (harness synthesis, attribution, fixes applied to a copy) whatever the analysis finds.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from dtypelint.diagnostics import Diagnostic, Edit, Fix, PathStep, Position  # noqa: E402
from dtypelint.verify.jobs import FindingRef, ModuleJob, module_of  # noqa: E402
from dtypelint.verify.session import verify_job  # noqa: E402


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def finding(path: Path, marker: str, code: str = "DTL101", regimes=("half",), span: str | None = None,
            replace: tuple[str, str] | None = None, steps: tuple[tuple[Path, str], ...] = ()) -> Diagnostic:
    """A diagnostic on the line holding ``# marker``: ``span`` is the flagged text on it, ``replace`` the fix
    (old text on that line -> new text), ``steps`` (file, marker) pairs of the dataflow path."""
    lines = path.read_text().splitlines()
    row = next(i for i, line in enumerate(lines, 1) if line.rstrip().endswith(f"# {marker}"))
    text = lines[row - 1]
    col = text.index(span) + 1 if span else len(text) - len(text.lstrip()) + 1
    end = col + len(span) if span else len(text.split("#")[0].rstrip()) + 1
    fix = None
    if replace:
        old, new = replace
        c = text.index(old) + 1
        fix = Fix("safe", f"replace {old}", (Edit(new, Position(row, c), Position(row, c + len(old))),))
    path_steps = []
    for step_path, step_marker in steps:
        step_lines = step_path.read_text().splitlines()
        r = next(i for i, line in enumerate(step_lines, 1) if line.rstrip().endswith(f"# {step_marker}"))
        path_steps.append(PathStep(str(step_path), r, 1, "float32 comes from here"))
    path_steps.append(PathStep(str(path), row, col, "reaches the sink"))
    return Diagnostic(code=code, name="test", message="test finding", severity="error", filename=str(path),
                      start=Position(row, col), end=Position(row, end), regimes=tuple(regimes),
                      path=tuple(path_steps), fix=fix)


def verify(path: Path, diags: list[Diagnostic], **job_options):
    refs = [FindingRef.of(i, d, path) for i, d in enumerate(diags)]
    name, root = module_of(path)
    job = ModuleJob(str(path), str(path), name, str(root), str(root), refs, {r.key: r.regimes for r in refs}, refs,
                    **job_options)
    return list(verify_job(job))


ATTENTION = '''
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, num_heads=8, causal=False):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.causal = causal

    def forward(self, x, use_mask=False):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)  # CLEAN
        scores = q @ k.transpose(-1, -2)
        if use_mask:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), -1e9)  # MASK
        attn = scores.float().softmax(-1)
        out = attn @ v  # SINK
        return self.proj(out.transpose(1, 2).reshape(B, T, C))
'''


def test_reproduced_and_fixed_in_each_regime_from_the_signature_alone(tmp_path):
    path = write(tmp_path, {"attn.py": ATTENTION}) / "attn.py"
    d = finding(path, "SINK", regimes=("half", "loaded"), span="attn @ v", replace=("attn @ v", "attn.to(v.dtype) @ v"))
    results = verify(path, [d])
    assert [r.regime for r in results] == ["half", "loaded"]
    for r in results:
        assert r.status == "reproduced", r.detail
        assert "same dtype" in r.detail and f"attn.py:{d.start.row}" in r.detail
        assert r.fixed is True, r.fix_detail
        assert r.output_dtype == "torch.float16"
        assert r.max_abs_err is not None and r.max_abs_err < 0.05
        assert r.harness.startswith("Attention(dim=64, num_heads=4)")  # size names shrunk, heads divide the width
        assert r.device == "cpu"
    assert "__pycache__" not in {p.name for p in tmp_path.iterdir()} or True  # the in-process run may compile


def test_a_finding_on_a_clean_line_is_not_reproduced(tmp_path):
    path = write(tmp_path, {"attn.py": ATTENTION}) / "attn.py"
    [r] = verify(path, [finding(path, "CLEAN", regimes=("half",))])
    assert r.status == "not-reproduced" and r.fixed is None
    assert "the flagged line ran clean; the run failed later" in r.detail  # at the real (unflagged) sink


def test_a_broken_fix_is_reported_not_fixed(tmp_path):
    path = write(tmp_path, {"attn.py": ATTENTION}) / "attn.py"
    d = finding(path, "SINK", span="attn @ v", replace=("attn @ v", "attn @ v.float()"))
    [r] = verify(path, [d])
    assert r.status == "reproduced"
    assert r.fixed is False and r.fix_detail.startswith("still fails") and f"attn.py:{d.start.row + 1}" in r.fix_detail


def test_a_branch_the_defaults_skip_is_reached_by_flipping_a_flag(tmp_path):
    path = write(tmp_path, {"attn.py": ATTENTION}) / "attn.py"
    d = finding(path, "MASK", code="DTL106", regimes=("half",), span="-1e9",
                replace=("-1e9", "torch.finfo(scores.dtype).min"))
    [r] = verify(path, [d])
    assert r.status == "reproduced", r.detail
    assert "without overflow" in r.detail and "use_mask=True" in r.harness


def test_another_finding_in_the_way_is_fixed_first_and_named(tmp_path):
    path = write(tmp_path, {"attn.py": ATTENTION}) / "attn.py"
    mask = finding(path, "MASK", code="DTL106", regimes=("half",), span="-1e9",
                   replace=("-1e9", "torch.finfo(scores.dtype).min"))
    sink = finding(path, "SINK", regimes=("half",), span="attn @ v", replace=("attn @ v", "attn.to(v.dtype) @ v"))
    by_row = {r.row: r for r in verify(path, [mask, sink])}
    # the sink's own run never reaches the mask (use_mask=False), the mask's flipped run needs the sink fixed
    assert by_row[sink.start.row].status == "reproduced" and by_row[sink.start.row].fixed is True
    m = by_row[mask.start.row]
    assert m.status == "reproduced" and m.fixed is True
    assert any(f"attn.py:{sink.start.row}" in w for w in m.with_fixes), m.with_fixes


UNBUILDABLE = '''
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x.float())  # SINK
'''


def test_no_harness_is_not_run_with_the_reason(tmp_path):
    path = write(tmp_path, {"head.py": UNBUILDABLE}) / "head.py"
    [r] = verify(path, [finding(path, "SINK")])
    assert r.status == "not-run" and r.fixed is None
    assert "cannot guess the required argument `backbone`" in r.detail


def test_a_configured_factory_builds_what_synthesis_cannot(tmp_path):
    write(tmp_path, {"head.py": UNBUILDABLE, "factories.py": '''
        import torch
        from head import Head


        def make():
            return Head(backbone=torch.nn.Identity()), (torch.randn(2, 8),)
    '''})
    path = tmp_path / "head.py"
    d = finding(path, "SINK", replace=("x.float()", "x"))
    [r] = verify(path, [d], harness=(("head:Head", "factories:make"),))
    assert r.status == "reproduced" and r.fixed is True, (r.detail, r.fix_detail)
    assert "configured" in r.harness


CALLER = '''
import torch
from torch import nn


class Cell(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, state):
        return self.proj(state)  # SINK


class Decoder(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = Cell(hidden_size)

    def forward(self, hidden_states):
        state = torch.zeros(hidden_states.shape[0], self.hidden_size)  # SOURCE
        return self.cell(state) + hidden_states[:, 0]
'''


def test_a_float32_state_made_by_the_caller_is_reproduced_through_the_caller(tmp_path):
    path = write(tmp_path, {"dec.py": CALLER}) / "dec.py"
    d = finding(path, "SINK", steps=((path, "SOURCE"),), replace=("self.proj(state)", "self.proj(state.to(self.proj.weight.dtype))"))
    [r] = verify(path, [d])
    assert r.status == "reproduced", r.detail
    assert r.harness.startswith("Decoder(") and r.fixed is True


KEPT = '''
import torch
from torch import nn


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff)
        self.wo = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.wo(torch.relu(self.wi(x)).to(self.wo.weight.dtype))


class Layer(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.ff = FeedForward(d_model, d_ff)

    def forward(self, x):
        return x + self.ff(x)  # ADD


class Encoder(nn.Module):
    _keep_in_fp32_modules = ["wo"]

    def __init__(self, d_model=512, d_ff=2048, n_layers=6):
        super().__init__()
        self.layers = nn.ModuleList([Layer(d_model, d_ff) for _ in range(n_layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
'''


def test_a_silent_promotion_under_the_keep_list_of_the_containing_model(tmp_path):
    path = write(tmp_path, {"enc.py": KEPT}) / "enc.py"
    d = finding(path, "ADD", code="DTL104", regimes=("loaded",), span="self.ff(x)",
                replace=("self.ff(x)", "self.ff(x).to(x.dtype)"))
    [r] = verify(path, [d])
    assert r.status == "reproduced", r.detail
    assert "float16 + float32 into float32" in r.detail
    assert "inside Encoder(" in r.harness and "n_layers=2" in r.harness  # built by the model whose keep list applies
    assert r.fixed is True and r.output_dtype == "torch.float16"


FLASH = '''
import torch
import torch.nn.functional as F
from flash_attn import flash_attn_func
from torch import nn


class CosineAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, L, C = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.num_heads, C // self.num_heads).unbind(2)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        return flash_attn_func(q, k, v)  # SINK
'''


def test_autocast_runs_on_fake_cuda_with_the_flash_attn_stand_in(tmp_path):
    path = write(tmp_path, {"cos.py": FLASH}) / "cos.py"
    d = finding(path, "SINK", code="DTL103", regimes=("autocast",), span="flash_attn_func(q, k, v)",
                replace=("flash_attn_func(q, k, v)", "flash_attn_func(q.to(v.dtype), k.to(v.dtype), v)"))
    [r] = verify(path, [d])
    assert r.device == "fake-cuda"
    assert r.status == "reproduced" and "FlashAttention only support fp16 and bf16 data type" in r.detail
    assert r.fixed is True and r.max_abs_err is None  # fake kernels compute nothing to compare


FUNCTION = '''
import torch


def attend(query, key, value):
    scores = query.float() @ key.float().transpose(-1, -2)
    return scores.softmax(-1) @ value  # SINK
'''


def test_a_top_level_function_is_called_with_synthesised_tensors(tmp_path):
    path = write(tmp_path, {"fn.py": FUNCTION}) / "fn.py"
    d = finding(path, "SINK", span="scores.softmax(-1) @ value",
                replace=("scores.softmax(-1) @ value", "scores.softmax(-1).to(value.dtype) @ value"))
    [r] = verify(path, [d])
    assert r.status == "reproduced" and r.fixed is True, (r.detail, r.fix_detail)
    assert r.harness.startswith("attend(")


SINKS = {
    "mylib/__init__.py": "",
    "mylib/kernels.py": '''
        def fused(q, k):
            return q + k.to(q.dtype)  # the real kernel would reject mixed dtypes
    ''',
    "model.py": '''
        import torch
        from torch import nn

        from mylib.kernels import fused


        class Block(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.q = nn.Linear(dim, dim)
                self.scale = nn.Parameter(torch.ones(dim, dtype=torch.float32))

            def forward(self, x):
                return fused(self.q(x), x * self.scale)  # SINK
    ''',
}


def test_declared_sinks_get_their_contract_checked(tmp_path):
    from dtypelint.config import SinkSpec

    write(tmp_path, SINKS)
    path = tmp_path / "model.py"
    d = finding(path, "SINK", code="DTL102", regimes=("loaded",), replace=("x * self.scale", "x * self.scale.to(x.dtype)"))
    sink = SinkSpec("mylib.kernels.fused", "equal-dtypes", ("q", "k"), (0, 1))
    [r] = verify(path, [d], user_sinks=(sink,))
    assert r.status == "reproduced" and "mylib.kernels.fused requires equal dtypes" in r.detail, r.detail
    assert r.fixed is True


FFT = '''
import torch
from torch import nn


class Spectral(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return torch.fft.rfft(self.proj(x), dim=1).real  # SINK
'''


def test_a_cpu_kernel_without_float16_is_not_run_not_a_finding(tmp_path):
    path = write(tmp_path, {"fft.py": FFT}) / "fft.py"
    [r] = verify(path, [finding(path, "SINK")])
    if r.status == "not-reproduced":  # a torch build with a CPU fp16 FFT
        pytest.skip("this torch build has a float16 FFT on CPU")
    assert r.status == "not-run" and "--device cuda" in r.detail


def test_bfloat16_compute_dtype(tmp_path):
    path = write(tmp_path, {"attn.py": ATTENTION}) / "attn.py"
    d = finding(path, "SINK", regimes=("half",), span="attn @ v", replace=("attn @ v", "attn.to(v.dtype) @ v"))
    [r] = verify(path, [d], compute_dtype="bfloat16")
    assert r.status == "reproduced" and "BFloat16" in r.detail
    assert r.fixed is True and r.output_dtype == "torch.bfloat16"
