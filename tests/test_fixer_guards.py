"""A fix must not refer to names or ``self`` attributes that do not exist."""

from __future__ import annotations

from dtypelint.fixer.guards import introduced_name_problems as problems

BASE = '''import torch
from torch import nn

SCALE = 2.0


class Inner(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.register_buffer("table", torch.zeros(d))

    def forward(self, x, v):
        y = self.proj(x)
        return y @ v


class Outer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.inner = Inner(d)

    def forward(self, x):
        return self.inner(x, x)
'''


def test_good_fixes_pass():
    for old, new in [
        ("return y @ v", "return y.to(v.dtype) @ v"),
        ("return y @ v", "return y.to(self.proj.weight.dtype) @ v"),
        ("return y @ v", "return y.to(self.table.dtype) @ v"),
        ("return y @ v", "return (y * SCALE).to(torch.float16) @ v"),
        ("return y @ v", "return y.to(x.dtype) @ v if self.training else y @ v"),
        ("return self.inner(x, x)", "return self.inner(x, x).to(x.dtype)"),
    ]:
        assert problems(BASE, BASE.replace(old, new)) == [], new


def test_caller_context_expression_in_callee_is_caught():
    new = BASE.replace("return y @ v", "return y.to(self.inner.proj.weight.dtype) @ v")
    assert problems(BASE, new) == ["`self.inner` is never set on `Inner` (in `Inner.forward`)"]
    new = BASE.replace("return y @ v", "return y.to(q.dtype) @ v")
    assert problems(BASE, new) == ["`q` is not defined in `Inner.forward`"]


def test_unknown_bases_and_dynamic_attributes_are_not_judged():
    text = BASE.replace("class Inner(nn.Module):", "class Inner(SomeImportedBase):")
    assert problems(text, text.replace("return y @ v", "return y.to(self.anything.dtype) @ v")) == []
    text = BASE.replace("    def forward(self, x, v):", "    def __getattr__(self, n):\n        return 1\n\n    def forward(self, x, v):")
    assert problems(text, text.replace("return y @ v", "return y.to(self.anything.dtype) @ v")) == []


def test_existing_references_are_not_the_fix_s_fault():
    text = BASE.replace("return y @ v", "return y @ v + undefined_before")
    assert problems(text, text.replace("y @ v", "y.to(v.dtype) @ v")) == []
