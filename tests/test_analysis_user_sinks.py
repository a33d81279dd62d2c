"""Sinks declared in configuration (`[tool.dtypelint.sinks]`) and the text prefilter."""
from dataclasses import replace
from pathlib import Path

from dtypelint.analysis import might_contain_hazard
from dtypelint.config import Settings, SinkSpec
from analysis_helpers import lint_text

SRC = '''import torch
from torch import nn
from mylib.ops import chunk_attn, fused_attn as fa


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.k_scale = nn.Parameter(torch.ones(d))

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        a = chunk_attn(q, k * self.k_scale, v)
        b = fa(q.float(), k, v)
        return a + b
'''


def settings(*sinks):
    return replace(Settings(root=Path(".")), sinks=tuple(sinks))


def test_equal_dtypes_user_sink():
    s = settings(SinkSpec("mylib.ops.chunk_attn", "equal-dtypes", ("q", "k", "v"), (0, 1, 2)))
    got = [(d.start.row, d.code, d.regimes) for d in lint_text(SRC, s)]
    assert got == [(14, "DTL102", ("autocast",))]


def test_half_only_user_sink_through_an_alias():
    s = settings(SinkSpec("mylib.ops.fused_attn", "half-only", ("q", "k", "v"), (0, 1, 2)))
    got = [(d.start.row, d.code, d.regimes) for d in lint_text(SRC, s)]
    assert got == [(15, "DTL103", ("autocast", "half", "loaded"))]


def test_no_sinks_no_findings():
    assert lint_text(SRC, settings()) == []


def test_prefilter_is_conservative():
    s = settings(SinkSpec("mylib.ops.chunk_attn", "equal-dtypes", ("q", "k", "v"), (0, 1, 2)))
    assert might_contain_hazard(SRC, s)
    assert might_contain_hazard("def f(a, b):\n    return chunk_attn(a, b)\n", s)
    assert might_contain_hazard("def f(a, b):\n    return a @ b\n", Settings(root=Path(".")))
    assert not might_contain_hazard("X = 1\nY = 'text'\n", s)
    assert not might_contain_hazard("def f(a, b):\n    return a + b\n", Settings(root=Path(".")))
    # a helper or dtype-strict kernel from another file of the project
    assert might_contain_hazard("from .kernels import attn\n\ndef f(a, b):\n    return attn(a, b)\n", Settings(root=Path(".")))
