"""Diagnostics carry the regime, the sink and the path from the fp32 source, and fixes are idempotent."""
from dtypelint.edits import apply_edit_groups
from dtypelint.source import SourceFile
from analysis_helpers import lint_text

SEED4 = '''import torch
from torch import nn


def chunk_rwkv(r, k, v):
    assert r.dtype == k.dtype == v.dtype
    return r * k * v


class TimeMix(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.key = nn.Linear(dim, dim)
        self.k_a = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        r, k, v = self.key(x), self.key(x), self.key(x)
        k = k.addcmul(k * 0.5, self.k_a)
        return chunk_rwkv(r, k, v)
'''


def test_path_names_source_promotion_and_sink():
    [d] = lint_text(SEED4)
    assert d.code == "DTL102" and d.regimes == ("autocast",)
    assert (d.start.row, d.start.column) == (19, 16)
    steps = [(s.row, s.column) for s in d.path]
    assert steps[0] == (14, 9)  # where self.k_a is created
    assert "float32 nn.Parameter (shape [dim]) in the autocast regime" in d.path[0].message
    assert "addcmul" in d.path[1].message and (d.path[1].row == 18)
    assert "asserts equal dtypes" in d.path[-1].message and "autocast regime" in d.path[-1].message
    assert "`k` (float32)" in d.message and "autocast regime" in d.message


def test_fix_is_idempotent_and_keeps_comments():
    src = ("import torch\n\n\ndef attend(q, k, v):\n    # upcast for stability\n"
           "    attn = (q.float() @ k.float().transpose(-2, -1)).softmax(-1)  # keep\n"
           "    return attn @ v  # mixed\n")
    [d] = lint_text(src)
    assert d.fix is not None and d.fix.applicability == "safe"
    fixed, applied = apply_edit_groups(SourceFile(src), [d.fix.edits])
    assert "return attn.to(v.dtype) @ v  # mixed" in fixed
    assert "# upcast for stability" in fixed and "# keep" in fixed
    assert lint_text(fixed) == []


def test_json_round_trip_keeps_the_path():
    from dtypelint.diagnostics import Diagnostic

    [d] = lint_text(SEED4)
    again = Diagnostic.from_json(d.to_json())
    assert again.path == d.path and again.regimes == d.regimes and again.fix == d.fix


def test_non_ascii_columns_are_code_points():
    src = ("import torch\n\n\ndef attend(q, k, v):\n    é = q.float() @ k.float()\n"
           "    s = 'ü'; out = é @ v\n    return out\n")
    [d] = lint_text(src)
    assert (d.start.row, d.start.column) == (6, 20)
