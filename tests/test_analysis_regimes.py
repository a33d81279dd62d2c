"""What parameters, buffers and plain tensor attributes are in each regime (DESIGN.md, facts §2.6, §2.7)."""
import ast
from dataclasses import replace
from pathlib import Path

import pytest

from dtypelint.analysis.interp import FileAnalysis, Frame
from dtypelint.analysis.lattice import Val
from dtypelint.config import Settings

SRC = '''
import torch
from torch import nn


class M(nn.Module):
    _keep_in_fp32_modules = ["gate"]
    _keep_in_fp32_modules_strict = ["router_bias"]

    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.ones(d))
        self.w32 = nn.Parameter(torch.ones(d, dtype=torch.float32))
        self.register_buffer("buf", torch.zeros(d))
        self.plain = torch.zeros(d)
        self.steps = torch.zeros(d, dtype=torch.long)
        self.gate = nn.Parameter(torch.ones(d))
        self.router_bias = nn.Parameter(torch.zeros(d))
        self.proj = nn.Linear(d, d)
        self.head = nn.Linear(d, d, dtype=torch.float32)

    def forward(self, x):
        return x
'''


def kind(attr, regime, compute="float16"):
    tree = ast.parse(SRC)
    settings = replace(Settings(root=Path(".")), compute_dtype=compute)
    fa = FileAnalysis(tree, SRC, "m.py", "m", settings)
    cnode, facts = fa.classes["M"]
    fn = next(s for s in cnode.body if isinstance(s, ast.FunctionDef) and s.name == "forward")
    frame = Frame(fa, fn, facts, regime, report=False)
    expr = ast.parse(attr, mode="eval").body
    return frame.eval(expr, {"self": Val("self")}).kind


@pytest.mark.parametrize("attr,autocast,half,loaded", [
    ("self.w", "fp32", "low", "low"),
    ("self.w32", "fp32", "low", "fp32"),  # explicit fp32 survives loading, not `.half()`
    ("self.buf", "fp32", "low", "low"),
    ("self.plain", "fp32", "fp32", "low"),  # plain tensors are never converted by `.half()`
    ("self.steps", "int", "int", "int"),
    ("self.gate", "fp32", "low", "fp32"),  # _keep_in_fp32_modules (float16 loading)
    ("self.router_bias", "fp32", "low", "fp32"),  # _strict
    ("self.proj.weight", "fp32", "low", "low"),
    ("self.head.weight", "fp32", "low", "fp32"),
])
def test_attribute_dtypes_per_regime(attr, autocast, half, loaded):
    assert (kind(attr, "autocast"), kind(attr, "half"), kind(attr, "loaded")) == (autocast, half, loaded)


def test_non_strict_keep_list_applies_to_float16_loading_only():
    assert kind("self.gate", "loaded", compute="bfloat16") == "low"
    assert kind("self.router_bias", "loaded", compute="bfloat16") == "fp32"
