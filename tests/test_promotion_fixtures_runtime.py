"""Runtime proof for the promotion rules' fixtures (DTL110-DTL113).

Each hazard fixture claims that a float16 activation leaves its module in float32 (a default-dtype tensor, a
float32 position table, a float32 island or a float32 softmax promoted it); its clean twin claims the module
returns float16.  This runs both on CPU in the regimes the findings name: ``half`` (the model `.half()`-ed,
float16 inputs) and ``loaded`` (built with float16 as the default dtype, so modules created with
`dtype=torch.float32` or `.float()`-ed in `__init__` stay float32, as `from_pretrained(torch_dtype=float16)`
keeps them; forward runs with the float32 default again).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"promotion_fixture_{name}", FIXTURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def first(out):
    return out[0] if isinstance(out, tuple) else out


def run(module, cls: str, kwargs: dict, inputs, regime: str):
    torch.manual_seed(0)
    if regime == "half":
        model = getattr(module, cls)(**kwargs).half().eval()
    else:
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float16)
        try:
            model = getattr(module, cls)(**kwargs).eval()
        finally:
            torch.set_default_dtype(previous)
    args = inputs()
    with torch.no_grad():
        return first(model(*args))


def f16(*shape):
    return lambda: (torch.randn(*shape, dtype=torch.float16),)


CASES = [
    # (fixture, class, constructor kwargs, inputs, regimes where the output is float32)
    ("dtl110_default_dtype_state", "StreamingConvBlock", dict(hidden_size=16), f16(2, 5, 16), ("half", "loaded")),
    ("dtl110_default_dtype_state", "SmoothedGate", dict(hidden_size=16), f16(2, 5, 16), ("half", "loaded")),
    ("dtl110_default_dtype_state", "LayerScaleMLP", dict(hidden_size=16), f16(2, 5, 16), ("half", "loaded")),
    ("dtl111_rotary_timestep_tables", "RotarySelfAttention", dict(hidden_size=32, num_heads=4), f16(2, 6, 32),
     ("half", "loaded")),
    ("dtl111_rotary_timestep_tables", "DiTBlock", dict(hidden_size=16),
     lambda: (torch.randn(2, 5, 16, dtype=torch.float16), torch.tensor([3, 700])), ("half", "loaded")),
    ("dtl112_fp32_islands", "AdaLayerNormZero", dict(hidden_size=16, cond_dim=8),
     lambda: (torch.randn(2, 5, 16, dtype=torch.float16), torch.randn(2, 8, dtype=torch.float16)), ("loaded",)),
    ("dtl112_fp32_islands", "RoutedExpertMix", dict(hidden_size=16, num_experts=4), f16(2, 5, 16), ("loaded",)),
    ("dtl112_fp32_islands", "ConditionedBlock", dict(hidden_size=16),
     lambda: (torch.randn(2, 5, 16, dtype=torch.float16), torch.randn(2, 64, dtype=torch.float16)), ("loaded",)),
    ("dtl113_fp32_softmax_mixtures", "SparseMoeBlock", dict(hidden_size=16, num_experts=4), f16(2, 5, 16),
     ("half", "loaded")),
    ("dtl113_fp32_softmax_mixtures", "AttentionPooler", dict(hidden_size=16), f16(2, 5, 16), ("half", "loaded")),
    ("dtl113_fp32_softmax_mixtures", "PointerHead", dict(hidden_size=16, vocab_size=12), f16(2, 5, 16),
     ("half", "loaded")),
]
IDS = [f"{fixture}-{cls}" for fixture, cls, *_ in CASES]


@pytest.mark.parametrize("fixture,cls,kwargs,inputs,promoted", CASES, ids=IDS)
@pytest.mark.parametrize("regime", ["half", "loaded"])
def test_hazard_returns_float32_exactly_where_claimed(fixture, cls, kwargs, inputs, promoted, regime):
    out = run(load(fixture), cls, kwargs, inputs, regime)
    expected = torch.float32 if regime in promoted else torch.float16
    assert out.dtype == expected


@pytest.mark.parametrize("fixture,cls,kwargs,inputs,promoted", CASES, ids=IDS)
@pytest.mark.parametrize("regime", ["half", "loaded"])
def test_clean_twin_returns_the_compute_dtype(fixture, cls, kwargs, inputs, promoted, regime):
    twin = fixture.replace("_", "_ok_", 1)
    out = run(load(twin), cls, kwargs, inputs, regime)
    assert out.dtype == torch.float16
    assert torch.isfinite(out).all()


def test_promotion_doubles_the_activation_memory():
    """The memory claim in numbers: the promoted output takes twice the bytes of the twin's."""
    hazard = run(load("dtl111_rotary_timestep_tables"), "RotarySelfAttention", dict(hidden_size=32, num_heads=4),
                 f16(2, 6, 32), "half")
    clean = run(load("dtl111_ok_rotary_timestep_tables"), "RotarySelfAttention", dict(hidden_size=32, num_heads=4),
                f16(2, 6, 32), "half")
    assert hazard.shape == clean.shape
    assert hazard.element_size() * hazard.nelement() == 2 * clean.element_size() * clean.nelement()
