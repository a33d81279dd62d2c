"""Runtime proof for DTL114 (module-boundary-dtype-leak) and DTL115 (mixed-dtype-op-inputs), torch 2.13 CPU.

DTL114 claims no crash where it is flagged: the module returns float32 for float16 inputs, and the caller's
next float16 layer then fails (or runs in float32).  The fixtures show the output dtype per regime, and
that the twins return the compute dtype.  DTL115 claims errors: grid_sample with an input and a grid of
different dtypes outside autocast, embedding_bag with weights of another dtype than the table in every
regime (embedding_bag is on no autocast list, so CPU autocast does not help either).  The facts sheet is
silent on these ops; the tests below are the facts ``torch_api.toml`` encodes, and they also prove why
``torch.bucketize`` / ``torch.searchsorted`` are *not* equal-dtype sinks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from dtypelint.verify import HarnessSpec  # noqa: E402
from dtypelint.verify.harness import verify_file  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LEAKS = FIXTURES / "dtl114_boundary_leaks.py"
LEAKS_OK = FIXTURES / "dtl114_ok_boundary_casts.py"


def _x(*shape):
    return lambda t: (t.randn(*shape),)


# (factory, init, inputs, kind, regimes in which the hazard file returns float32)
DTL114_CASES = [
    ("TokenGate", dict(dim=16), _x(2, 5, 16), "class", ("half",)),
    ("MixerModel", dict(hidden_size=16), _x(2, 5, 16), "class", ("loaded",)),
    ("SoftCap", dict(dim=16, n_classes=7), _x(2, 16), "class", ("half",)),
    ("RegisterTokens", dict(dim=16, num_registers=2), _x(2, 5, 16), "class", ("half",)),
]


@pytest.mark.parametrize("factory,init,inputs,kind,leaks", DTL114_CASES, ids=[c[0] for c in DTL114_CASES])
def test_dtl114_fixture_returns_float32_for_float16_inputs_where_flagged(factory, init, inputs, kind, leaks):
    spec = HarnessSpec(factory, init, inputs, kind=kind)
    for regime, res in verify_file(LEAKS, spec, regimes=("half", "loaded")).items():
        assert res.ok, res.summary()
        want = "torch.float32" if regime in leaks else "torch.float16"
        assert res.output_dtype == want, f"{factory} [{regime}]: {res.output_dtype}"
    for regime, res in verify_file(LEAKS_OK, spec, regimes=("autocast", "half", "loaded")).items():
        # a plain tensor attribute is not moved to the (fake) GPU either: a device error there, not a dtype one
        assert res.ok or not res.dtype_error, res.summary()
        if regime != "autocast":
            assert res.output_dtype == "torch.float16", f"twin {factory} [{regime}]: {res.output_dtype}"


def test_catalog_drop_path_example_returns_float32_when_training():
    """The catalog's helper case: `torch.rand(shape)` without `dtype=` (float32) scales float16 activations.
    DTL110 (default-dtype factory) names it; DTL114 leaves the sources DTL110-DTL113 name to them."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    data = tomllib.loads((Path(__file__).resolve().parent.parent / "rules" / "DTL110.toml").read_text())
    code = next(ex for ex in data["invalid"] if "def drop_path" in ex["code"])
    for source, want in ((code["code"], torch.float32), (code["fixed"], torch.float16)):
        ns: dict = {}
        exec(compile(source, "<DTL114 example>", "exec"), ns)
        x = torch.randn(4, 5, 16, dtype=torch.float16)
        assert ns["DropPath"](0.1).train()(x).dtype == want
        assert ns["DropPath"](0.1).eval()(x).dtype == torch.float16  # the early return: no leak in eval


def test_a_float32_module_output_breaks_the_next_float16_layer():
    """What the leak does to the caller: its next layer (float16 weights, no autocast) raises."""
    h = torch.randn(2, 16, dtype=torch.float16)
    leaked = h * torch.linspace(0.5, 1.0, 16)  # TokenGate's gate after `.half()`: a plain attribute stays fp32
    assert leaked.dtype == torch.float32
    nxt = torch.nn.Linear(16, 16).half()
    with pytest.raises(RuntimeError, match="same dtype"):
        nxt(leaked)


def test_keep_list_parameter_promotes_the_output_when_loaded():
    """The loaded regime keeps `D` (named by `_keep_in_fp32_modules`) float32: `u * D` is float32."""
    u = torch.randn(2, 16, dtype=torch.float16)
    d = torch.ones(16, dtype=torch.float32)
    assert (torch.tanh(u) + u * d).dtype == torch.float32
    assert (torch.tanh(u) + u * d.to(u.dtype)).dtype == torch.float16
    # a 0-dim float32 scale would not promote (facts §2.1): only a dim>=1 parameter leaks
    assert (u * torch.tensor(2.0)).dtype == torch.float16


def test_tensor_clamp_bound_promotes():
    h = torch.randn(4, 3, dtype=torch.float16)
    assert torch.clamp(h, min=torch.zeros(3)).dtype == torch.float32
    assert h.clamp_min(torch.zeros(3)).dtype == torch.float32
    assert h.clamp(min=torch.tensor(0.0)).dtype == torch.float16  # 0-dim bound
    assert h.clone().clamp_(min=torch.zeros(3)).dtype == torch.float16  # in place keeps the dtype


# -- DTL115 ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16])
def test_grid_sample_needs_one_dtype_outside_autocast(low):
    x = torch.randn(1, 2, 4, 4)
    grid = torch.rand(1, 3, 3, 2) * 2 - 1
    name = "Half" if low == torch.float16 else "BFloat16"
    with pytest.raises(RuntimeError, match=f"expected scalar type {name} but found Float"):
        F.grid_sample(x.to(low), grid, align_corners=False)
    with pytest.raises(RuntimeError, match=f"expected scalar type Float but found {name}"):
        F.grid_sample(x, grid.to(low), align_corners=False)
    assert F.grid_sample(x.to(low), grid.to(low), align_corners=False).dtype == low


def test_grid_sample_under_cpu_autocast_runs_in_float32():
    x = torch.randn(1, 2, 4, 4, dtype=torch.bfloat16)
    grid = torch.rand(1, 3, 3, 2) * 2 - 1
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert F.grid_sample(x, grid, align_corners=False).dtype == torch.float32


@pytest.mark.parametrize("table,weights", [(torch.float16, torch.float32), (torch.float32, torch.float16)])
def test_embedding_bag_weights_must_match_the_table(table, weights):
    ids, offsets = torch.tensor([0, 1, 2]), torch.tensor([0])
    w = torch.randn(5, 3, dtype=table)
    with pytest.raises(RuntimeError, match="to have the same type as tensor for argument #1 'per_sample_weights'"):
        F.embedding_bag(ids, w, offsets, mode="sum", per_sample_weights=torch.rand(3, dtype=weights))
    bag = torch.nn.EmbeddingBag(5, 3, mode="sum").to(table)
    with pytest.raises(RuntimeError, match="per_sample_weights"):
        bag(ids, offsets, per_sample_weights=torch.rand(3, dtype=weights))
    assert bag(ids, offsets, per_sample_weights=torch.rand(3, dtype=weights).to(bag.weight.dtype)).dtype == table


def test_embedding_bag_raises_under_cpu_autocast_too():
    ids, offsets = torch.tensor([0, 1, 2]), torch.tensor([0])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="per_sample_weights"):
            F.embedding_bag(ids, torch.randn(5, 3), offsets, mode="sum",
                            per_sample_weights=torch.rand(3, dtype=torch.bfloat16))


def test_bucketize_and_searchsorted_accept_mixed_dtypes():
    """Not sinks: mixed boundaries and inputs are compared in a common dtype, and the result is int64."""
    lp = torch.tensor([0.1, 0.3, 0.6], dtype=torch.float16)
    bounds = torch.tensor([0.2, 0.5])
    assert torch.bucketize(lp, bounds).tolist() == [0, 1, 2]
    assert torch.bucketize(lp.float(), bounds.half()).tolist() == [0, 1, 2]
    assert torch.searchsorted(bounds.half(), lp.float()).tolist() == [0, 1, 2]
    assert torch.searchsorted(bounds, lp).dtype == torch.int64


def test_index_put_with_a_bool_mask_raises_under_cpu_autocast():
    """DTL105's `x[mask] = v` case (an fp32 embedding output written with a low-precision value)."""
    embeds = torch.zeros(2, 4, 3)  # an fp32 embedding table's output under autocast
    image = torch.ones(2, 3, dtype=torch.bfloat16)
    ids = torch.tensor([[0, 9, 0, 9], [0, 0, 0, 0]])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
            embeds[ids == 9] = image
        embeds[ids == 9] = image.to(embeds.dtype)
