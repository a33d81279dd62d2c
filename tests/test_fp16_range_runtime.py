"""DTL107-DTL109 hazards are real: the numbers in float16, and the fixtures run in the half regime.

Each fixture's flagged model returns NaN/inf (or zeros) in float16 on CPU; its clean twin, built and
called the same way, stays finite and close to the float32 result.  The pure-number tests pin
the facts the rules encode (facts §3.1, §5) and show bfloat16 is not affected.
"""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from dtypelint.verify import HarnessSpec, RunSetup, run_regime  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
H, B, F32 = torch.float16, torch.bfloat16, torch.float32


# -- the numbers -------------------------------------------------------------------------------
def test_sum_of_squares_of_activations_near_300_overflows_in_float16_only():
    x = torch.full((4, 64), 300.0) * torch.tensor([1.0, -1.0]).repeat(32)
    assert torch.isinf(x.to(H).pow(2).mean(-1)).all()
    assert torch.isinf((x.to(H) * x.to(H)).sum(-1)).all()
    assert torch.isinf(x.to(H).square().mean(-1)).all()
    assert torch.isinf(x.to(H).var(-1)).all()
    # the twins: squares in float32, and std (its float32 accumulation fits), and bfloat16
    assert torch.isfinite(x.to(H).float().pow(2).mean(-1)).all()
    assert torch.isfinite(x.to(H).std(-1)).all()
    assert torch.isfinite(x.to(B).pow(2).mean(-1)).all()
    # a sum overflows sooner: 1024 squares of 8 add up to 65536, while their mean (64) fits
    eights = torch.full((1024,), 8.0, dtype=H)
    assert torch.isinf((eights * eights).sum()) and torch.isfinite((eights * eights).mean())
    # below 256 nothing overflows: the hazard depends on the activations' magnitude
    assert torch.isfinite(torch.full((64,), 255.0, dtype=H).pow(2).mean())


def test_rms_norm_of_large_activations_returns_zeros_in_float16():
    x = torch.full((2, 64), 300.0, dtype=H)
    naive = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    upcast = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(H)
    assert (naive == 0).all()
    assert torch.allclose(upcast.float(), torch.ones(2, 64), atol=1e-3)


def test_small_eps_rounds_to_zero_in_float16_and_zero_rows_turn_nan():
    assert torch.tensor(1e-12).to(H).item() == 0.0 and torch.tensor(1e-8).to(H).item() == 0.0
    assert torch.tensor(2 ** -25).to(H).item() == 0.0  # the rule's threshold
    assert torch.tensor(3e-8).to(H).item() > 0  # above it: a subnormal survives
    assert torch.tensor(1e-12).to(B).item() > 0  # bfloat16 holds it
    z = torch.zeros(2, 8, dtype=H)
    assert torch.isnan(z / (z.norm(dim=-1, keepdim=True) + 1e-12)).all()
    assert torch.isinf(torch.rsqrt(z.pow(2).mean(-1) + 1e-12)).all()
    assert torch.isinf(torch.log(z + 1e-10)).all()
    assert torch.isnan(z / z.norm(dim=-1, keepdim=True).clamp(min=1e-12)).all()
    # the fix: max(eps, finfo(dtype).tiny) keeps float32's eps and gives float16 a live one
    assert max(1e-12, torch.finfo(F32).tiny) == 1e-12
    assert (z / (z.norm(dim=-1, keepdim=True) + max(1e-12, torch.finfo(z.dtype).tiny)) == 0).all()
    zb = z.to(B)
    assert torch.isfinite(zb / (zb.norm(dim=-1, keepdim=True) + 1e-12)).all()


def test_big_constants_become_minus_inf_silently_and_masked_rows_turn_nan():
    scores = torch.randn(2, 4).to(H)
    keep = torch.tensor([[False] * 4, [True, True, False, True]])
    where = torch.where(keep, scores, -1e9)
    assert where.dtype == H and torch.isneginf(where[0]).all()
    assert torch.isnan(where.softmax(-1)[0]).all() and torch.isfinite(where.softmax(-1)[1]).all()
    additive = scores + (1.0 - keep.to(H)) * -1e9
    assert torch.isneginf(additive[0]).all() and torch.isnan(additive.softmax(-1)[0]).all()
    assert torch.isneginf(torch.tensor(torch.finfo(F32).min, dtype=H))
    assert torch.isneginf(scores.new_tensor(-1e9))
    assert torch.isneginf(torch.full((3, 3), -1e9).triu(1).to(H)[0, 1])  # a float32 mask cast late
    # the checked forms raise instead (DTL106)
    with pytest.raises(RuntimeError, match="without overflow"):
        scores.masked_fill(~keep, -1e9)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.full_like(scores, -1e9)
    assert torch.full_like(scores, -1e9, dtype=F32).dtype == F32  # an explicit float32 `dtype=` holds it
    # twins: finfo(dtype).min and -1e4 stay finite, fully masked rows are uniform; bfloat16 holds -1e9
    fixed = torch.where(keep, scores, torch.finfo(scores.dtype).min)
    assert torch.isfinite(fixed.softmax(-1)).all()
    assert torch.isfinite((scores + (1.0 - keep.to(H)) * -1e4).softmax(-1)).all()
    assert torch.isfinite(torch.where(keep, scores.to(B), -1e9).softmax(-1)).all()


# -- the fixtures, in the half regime ---------------------------------------------------------------
def _run(stem: str, spec: HarnessSpec):
    result = run_regime(FIXTURES, stem, spec, "half", setup=RunSetup(reference=True))
    assert result.ok, result.summary()
    out = result.output
    return out if isinstance(out, torch.Tensor) else out[-1], result


def _padding(t):
    keep = torch.ones(2, 6, dtype=torch.bool)
    keep[1] = False  # a row of padding only
    return (t.randn(2, 6, 32), keep)


def _window(t):
    valid = torch.ones(2, 5, dtype=torch.bool)
    valid[0] = False
    return (t.randn(2, 4, 16), t.randn(2, 5, 16), valid)


def _zero_row(t):
    x = t.randn(3, 16)
    x[1] = 0
    return (x,)


def _zero_token(t):
    x = t.randn(2, 4, 16)
    x[0, 2] = 0
    return (x,)


CASES = {
    "dtl107_padded_attention_silent_inf::where": (
        HarnessSpec("PaddedSelfAttention", dict(hidden_size=32, num_heads=4), _padding), "nan"),
    "dtl107_padded_attention_silent_inf::additive": (
        HarnessSpec("PaddedSelfAttention", dict(hidden_size=32, num_heads=4, additive=True), _padding), "nan"),
    "dtl107_padded_attention_silent_inf::window": (
        HarnessSpec("WindowedCrossAttention", dict(dim=16, window=1), _window), "nan"),
    "dtl108_handwritten_norms_eps::l2": (HarnessSpec("l2_normalize", {}, _zero_row, kind="function"), "nan"),
    "dtl108_handwritten_norms_eps::scalenorm": (HarnessSpec("ScaleNorm", dict(dim=16), _zero_token), "nan"),
    "dtl108_handwritten_norms_eps::entropy": (
        HarnessSpec("PolicyHead", dict(dim=16, n_actions=64), lambda t: (t.randn(8, 16) * 100,)), "nan"),
    "dtl109_half_norms_sum_squares::rmsnorm": (
        HarnessSpec("RMSNorm", dict(dim=64), lambda t: (t.randn(2, 8, 64) * 300,)), "zeros"),
    "dtl109_half_norms_sum_squares::gated": (
        HarnessSpec("GatedConvBlock", dict(channels=4), lambda t: (t.randn(2, 4, 8, 8) * 100,)), "nan"),
    "dtl109_half_norms_sum_squares::var": (
        HarnessSpec("StatsPoolingHead", dict(dim=16, out_dim=8), lambda t: (t.randn(2, 10, 16) * 400,)), "nan"),
    "dtl109_half_norms_sum_squares::square": (
        HarnessSpec("StatsPoolingHead", dict(dim=16, out_dim=8, use_var=False),
                    lambda t: (t.randn(2, 10, 16) * 400,)), "nan"),
}


@pytest.mark.parametrize("key", list(CASES))
def test_flagged_fixture_breaks_in_float16(key):
    stem, _, _ = key.partition("::")
    spec, how = CASES[key]
    out, result = _run(stem, spec)
    if how == "nan":
        assert not torch.isfinite(out).all(), f"{key}: expected NaN/inf in float16, got a finite output"
    else:  # the norm of overflowing squares is x * rsqrt(inf) = 0 where float32 gives about 1
        assert (out == 0).all() and result.max_rel_err is not None and result.max_rel_err > 0.5


@pytest.mark.parametrize("key", list(CASES))
def test_clean_twin_stays_finite_in_float16(key):
    stem, _, _ = key.partition("::")
    twin = stem.replace("_", "_ok_", 1) if not stem.startswith("dtl107") else "dtl107_ok_padded_attention_finfo"
    spec, _ = CASES[key]
    out, result = _run(twin, spec)
    assert torch.isfinite(out).all(), f"{twin}: float16 output is not finite"
    if not stem.startswith("dtl107") and result.max_rel_err is not None:
        # (a fully masked attention row has no meaningful value to compare: only finiteness counts there)
        assert result.max_rel_err < 0.05, (twin, result.max_rel_err)
