"""Promote events and the fates of promoted values (what DTL110-DTL113 judge).

A promotion of a low-precision activation by a float32 operand is reported only when its result is
returned in float32; these tests pin the other fates (cast back, reached a sink, trail lost, a 0-dim
result) and the analysis facts the rules lean on.
"""

from __future__ import annotations

import textwrap

from analysis_helpers import lint_text

from dtypelint.analysis.fates import Fates, last_origin
from dtypelint.analysis.lattice import Step, Val


def codes(src: str) -> list[tuple[str, int]]:
    return sorted((d.code, d.start.row) for d in lint_text(textwrap.dedent(src).lstrip()))


HEADER = """
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
"""


def block(body: str) -> str:
    return textwrap.dedent(HEADER).lstrip() + textwrap.indent(textwrap.dedent(body), " " * 8)


def test_a_returned_promotion_is_reported_at_the_promoting_op():
    assert codes(block("""
        scale = torch.ones(h.shape[-1], device=h.device)
        return h * scale
    """)) == [("DTL110", 16)]


def test_a_promotion_cast_back_later_is_quiet():
    assert codes(block("""
        scale = torch.ones(h.shape[-1], device=h.device)
        y = h * scale
        return y.to(h.dtype)
    """)) == []


def test_a_promotion_written_into_a_low_precision_tensor_is_quiet():
    assert codes(block("""
        out = torch.empty_like(h)
        out.copy_(h * torch.ones(h.shape[-1], device=h.device))
        return out
    """)) == []


def test_a_promotion_that_reaches_a_linear_is_the_linear_rules_finding():
    # half regime: F.linear mismatch (DTL101); the promotion itself is not reported again
    found = codes(block("""
        scale = torch.ones(h.shape[-1], device=h.device)
        return self.out(h * scale)
    """))
    assert ("DTL101", 16) in found
    assert not [c for c in found if c[0] == "DTL110"]


def test_a_promotion_whose_trail_is_lost_makes_no_claim():
    assert codes(block("""
        scale = torch.ones(h.shape[-1], device=h.device)
        return some_library_function(h * scale)
    """)) == []


def test_a_zero_dim_result_is_no_escape():
    assert codes(block("""
        scale = torch.ones(h.shape[-1], device=h.device)
        return (h * scale).mean()
    """)) == []


def test_an_int_indexed_table_may_be_zero_dim_and_makes_no_claim():
    assert codes(block("""
        taps = torch.tensor([0.25, 0.5, 0.25], device=h.device)
        return h * taps[1]
    """)) == []


def test_tensor_of_a_list_the_analysis_cannot_see_is_no_factory():
    # image sizes are ints: torch.tensor([...]) of them is int64, which does not promote
    src = """
    import torch


    def rescale(boxes, target_sizes):
        widths = torch.tensor([s[1] for s in target_sizes])
        return boxes * widths[:, None]
    """
    assert codes(src) == []


def test_autocast_fp32_ops_keep_a_zero_dim_input_zero_dim():
    # torch.tensor(1 / 0.07).log() is float32 under autocast but still 0-dim: no promotion
    assert codes(block("""
        logit_scale = torch.tensor(1 / 0.07).log().exp()
        return logit_scale * h
    """)) == []


def test_promotions_combined_into_one_value_are_one_finding_with_every_cast():
    src = block("""
        t = torch.arange(h.shape[1], device=h.device).float()
        emb = torch.outer(t, torch.ones(h.shape[-1], device=h.device))
        cos, sin = emb.cos(), emb.sin()
        return h * cos + h.flip(-1) * sin
    """)
    diags = lint_text(src)
    assert [(d.code, d.start.row) for d in diags] == [("DTL111", 18)]
    assert "promoted again at `h.flip(-1) * sin`" in diags[0].message
    texts = sorted(e.content for e in diags[0].fix.edits)
    assert texts == [".to(h.dtype)", ".to(h.dtype)"]


def test_a_kept_modules_output_added_to_the_residual_is_dtl104_only():
    src = """
    import torch
    from torch import nn


    class Layer(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.ff = nn.Linear(dim, dim, dtype=torch.float32)

        def forward(self, h):
            return h + self.ff(h.to(self.ff.weight.dtype))
    """
    assert codes(src) == [("DTL104", 11)]


def test_low_precision_buffers_are_not_activations():
    # half regime: inv_freq is float16 and t.float() float32; `t.float() * self.inv_freq` is no finding
    src = """
    import torch
    from torch import nn


    class Rotary(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)))

        def forward(self, x, seq_len):
            t = torch.arange(seq_len, device=x.device).float()
            freqs = t[:, None] * self.inv_freq
            return freqs.cos().to(x.dtype), freqs.sin().to(x.dtype)
    """
    assert codes(src) == []


def step(row: int, origin: str = "promoted") -> Step:
    return Step("f.py", row, 1, f"step {row}", origin=origin)


def test_fates_share_one_fate_once_values_combine():
    fates = Fates()
    a, b, c = step(1), step(2), step(3)
    fates.link([Val("fp32", prov=(a,)), Val("fp32", prov=(b,))])
    fates.escape((a,))
    assert fates.of(b) == "escape"
    assert fates.of(c) == ""
    fates.cast_back((b,))
    assert fates.of(a) == "cast"  # cast back anywhere wins: the float32 was deliberate
    fates.reach_sink((c,))
    assert fates.of(c) == "sink"


def test_last_origin_is_the_latest_tagged_step():
    prov = (step(1, "upcast"), step(2, ""), step(3, "softmax"), step(4, ""))
    assert last_origin(prov) == "softmax"
    assert last_origin((step(1, ""),)) == ""


def test_free_functions_and_data_pipelines_are_not_model_code():
    # the activation assumption holds for model code only: here `lam` is a mixing weight, `pos` positions
    src = """
    import torch


    def mix_targets(labels_one_hot, lam):
        smooth = torch.full(labels_one_hot.shape, 0.1, device=lam.device)
        return (labels_one_hot + smooth) * lam


    class Mixup:
        def __call__(self, x, target):
            weights = torch.ones(x.shape[-1], device=x.device)
            return x * weights, target
    """
    assert codes(src) == []
