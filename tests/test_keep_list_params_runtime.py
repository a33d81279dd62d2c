"""`_keep_in_fp32_modules(_strict)` entries that name parameters and buffers (transformers 5.23, CPU).

What the analysis's `loaded` regime encodes (``analysis/interp/modules.py``, ``keep_lists.py``): a listed
parameter or persistent buffer stays float32 when loaded in float16 (the strict list: float16 and bfloat16),
a *non-persistent* buffer is not in the state dict, so the list does not touch it (it keeps the dtype its
``__init__`` gave it under the loader's default dtype), and a module mixing a kept parameter into float16
activations returns float32 (DTL114).  Skipped where transformers is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from analysis_helpers import lint_text  # noqa: E402
from dtypelint.config import Settings  # noqa: E402

SOURCE = '''
import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel


class ProbeConfig(PretrainedConfig):
    model_type = "dtypelint_keep_probe"

    def __init__(self, hidden_size=8, **kwargs):
        self.hidden_size = hidden_size
        super().__init__(**kwargs)


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.in_proj = nn.Linear(dim, dim)
        self.D = nn.Parameter(torch.ones(dim))
        self.register_buffer("pos_scale", torch.ones(dim))
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2) / dim)), persistent=False)

    def forward(self, x):
        u = self.in_proj(x)
        return torch.tanh(u) + u * self.D

    def scaled(self, x):
        return self.in_proj(x) * self.pos_scale

    def phased(self, x):
        u = self.in_proj(x)
        return u[..., ::2] * self.inv_freq


class ProbeModel(PreTrainedModel):
    config_class = ProbeConfig
    _keep_in_fp32_modules = ["D", "pos_scale", "inv_freq"]

    def __init__(self, config):
        super().__init__(config)
        self.mixer = Mixer(config.hidden_size)
        self.post_init()

    def forward(self, x):
        return self.mixer(x)
'''


def _load(tmp_path, dtype):
    ns: dict = {}
    exec(compile(SOURCE, "<keep probe>", "exec"), ns)
    ns["ProbeModel"](ns["ProbeConfig"]()).save_pretrained(tmp_path)
    return ns["ProbeModel"].from_pretrained(tmp_path, dtype=dtype)


def test_listed_parameters_and_persistent_buffers_stay_float32_when_loaded_in_float16(tmp_path):
    m = _load(tmp_path, torch.float16)
    assert m.mixer.D.dtype == torch.float32
    assert m.mixer.pos_scale.dtype == torch.float32
    assert m.mixer.in_proj.weight.dtype == torch.float16
    assert m.mixer.inv_freq.dtype == torch.float16  # not in the state dict: the list does not apply
    x = torch.randn(2, 8, dtype=torch.float16)
    assert m(x).dtype == torch.float32  # the DTL114 leak
    assert m.mixer.scaled(x).dtype == torch.float32
    assert m.mixer.phased(x).dtype == torch.float16


def test_the_non_strict_list_does_not_apply_to_bfloat16(tmp_path):
    m = _load(tmp_path, torch.bfloat16)
    assert m.mixer.D.dtype == torch.bfloat16
    assert m(torch.randn(2, 8, dtype=torch.bfloat16)).dtype == torch.bfloat16


def test_the_analysis_agrees():
    rows = {(d.code, d.start.row, d.regimes) for d in lint_text(SOURCE, Settings(root=Path(".")))}
    lines = SOURCE.splitlines()
    at = {i + 1 for i, line in enumerate(lines) if "return torch.tanh(u) + u * self.D" in line
          or "return self.in_proj(x) * self.pos_scale" in line}
    assert {(c, r) for c, r, _ in rows} == {("DTL114", r) for r in at}
    assert all(regimes == ("loaded",) for _, _, regimes in rows)
