"""The runtime harness (``dtypelint.verify``): fake CUDA indexing, contracts, stand-ins, regimes."""

from __future__ import annotations

import sys

import pytest


torch = pytest.importorskip("torch")

from dtypelint.verify import HarnessSpec, run_regime  # noqa: E402
from dtypelint.verify.contracts import ContractMode  # noqa: E402
from dtypelint.verify.fakecuda import FakeIndexing, cuda_available  # noqa: E402
from dtypelint.verify.stubs import stubs_installed  # noqa: E402


@pytest.fixture
def fake():
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


INDEXES = [
    (slice(None), None), (0,), (Ellipsis, 0), (Ellipsis, -1, None), (slice(None), slice(1, 3)),
    (slice(None, None, 2),), ([0, 1],), (slice(None), [1, 0]), (None, Ellipsis), (1, slice(None), 2),
]


@pytest.mark.parametrize("idx", INDEXES, ids=repr)
def test_fake_indexing_matches_real_shapes(fake, idx):
    real = torch.zeros(2, 4, 6)
    expected = real[idx].shape
    with fake, FakeIndexing():
        t = torch.empty(2, 4, 6, device="cuda")
        assert t[idx].shape == expected


def test_fake_setitem_basic_casts_advanced_checks(fake):
    with fake, FakeIndexing(), cuda_available(), ContractMode(enforce=True) as mode:
        h = torch.empty(4, 6, dtype=torch.float16, device="cuda")
        h[:, :2] = torch.empty(4, 2, dtype=torch.float32, device="cuda")  # copy_: silently casts, like CUDA
        with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match"):
            h[torch.tensor([0, 1], device="cuda")] = torch.empty(2, 6, dtype=torch.float32, device="cuda")
    assert any(e.op == "index_put" and not e.ok for e in mode.events)


def test_contracts_follow_autocast(fake):
    with fake, cuda_available(), ContractMode(enforce=True):
        a = torch.empty(4, 4, dtype=torch.float16, device="cuda")
        b = torch.empty(4, 4, dtype=torch.float32, device="cuda")
        torch.set_autocast_enabled("cuda", True)
        torch.set_autocast_dtype("cuda", torch.float16)
        try:
            assert (a @ b).dtype == torch.float16  # autocast casts both operands
            with torch.autocast("cuda", enabled=False):
                with pytest.raises(RuntimeError, match="same dtype|scalar type"):
                    a @ b
            with pytest.raises(RuntimeError, match="without overflow"):
                a.masked_fill(a > 0, -1e9)  # autocast never touches fill values
            assert a.masked_fill(a > 0, torch.finfo(a.dtype).min).dtype == torch.float16
        finally:
            torch.set_autocast_enabled("cuda", False)


def test_flash_attn_stand_in():
    with stubs_installed() as events:
        from flash_attn import flash_attn_func

        q = torch.zeros(1, 4, 2, 8, dtype=torch.float16)
        assert flash_attn_func(q, q, q).dtype == torch.float16
        with pytest.raises(RuntimeError, match="FlashAttention only support fp16 and bf16 data type"):
            flash_attn_func(q.float(), q, q)
        with pytest.raises(RuntimeError, match="query and key must have the same dtype"):
            flash_attn_func(q, q.bfloat16(), q)
        from xformers.ops import memory_efficient_attention

        with pytest.raises(ValueError, match="Query/Key/Value should all have the same dtype"):
            memory_efficient_attention(q, q.float(), q)
    assert [e.ok for e in events] == [True, False, False, False]
    assert "flash_attn" not in sys.modules or not getattr(sys.modules["flash_attn"], "__dtypelint_stub__", False)


MODEL = '''
import torch
from torch import nn


class Block(nn.Module):
    _keep_in_fp32_modules = ["head"]

    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.scale = nn.Parameter(torch.ones(d, dtype=torch.float32))
        self.head = nn.Linear(d, d)

    def forward(self, x):
        y = self.proj(x) * self.scale  # fp32 once the model is loaded in fp16 (explicit dtype)
        return y @ self.proj.weight


class Kept(Block):
    def forward(self, x):
        return self.head(x)
'''


def test_regimes_build_the_module_like_the_analysis_assumes(tmp_path):
    (tmp_path / "model_mod.py").write_text(MODEL)
    spec = HarnessSpec("Block", dict(d=8), lambda t: (t.randn(2, 8),))
    half = run_regime(tmp_path, "model_mod", spec, "half")
    assert half.ok and half.output_dtype == "torch.float16"  # .half() converts the explicit fp32 parameter too
    loaded = run_regime(tmp_path, "model_mod", spec, "loaded")
    assert not loaded.ok and loaded.dtype_error and "same dtype" in loaded.error  # explicit fp32 kept
    autocast = run_regime(tmp_path, "model_mod", spec, "autocast")
    assert autocast.ok and autocast.output_dtype == "torch.float16"
    assert any(e.op == "mm" and e.ok for e in autocast.sinks)
    kept = run_regime(tmp_path, "model_mod", HarnessSpec("Kept", dict(d=8), lambda t: (t.randn(2, 8),)), "loaded")
    assert not kept.ok and kept.dtype_error  # `head` kept in fp32 receives an fp16 input


def test_a_broken_harness_is_not_a_dtype_error(tmp_path):
    (tmp_path / "model_mod.py").write_text(MODEL)
    res = run_regime(tmp_path, "model_mod", HarnessSpec("Block", dict(d=8), lambda t: (t.randn(2, 5),)), "half")
    assert not res.ok and not res.dtype_error


def test_keep_lists_like_from_pretrained():
    from dtypelint.verify.harness import keep_in_fp32_names

    class Base:
        _keep_in_fp32_modules = ["wo"]

    class Model(Base):
        _keep_in_fp32_modules_strict = ["router"]

    assert sorted(keep_in_fp32_names(Model(), "float16")) == ["router", "wo"]
    assert keep_in_fp32_names(Model(), "bfloat16") == ["router"]  # the plain list applies to fp16 only

    class Override(Base):
        _keep_in_fp32_modules = ["lm_head"]

    assert keep_in_fp32_names(Override(), "float16") == ["lm_head"]  # a subclass's list replaces its base's

def test_fused_norm_and_rotary_stand_ins_check_the_weight_and_tables():
    with stubs_installed() as events:
        from apex.normalization.fused_layer_norm import fused_rms_norm_affine
        from flash_attn.layers.rotary import apply_rotary_emb
        from flash_attn.ops.rms_norm import rms_norm
        from flash_attn.ops.triton.layer_norm import layer_norm_fn

        x = torch.randn(2, 4, 8).half()
        w = torch.ones(8)
        assert rms_norm(x, w.half()).dtype == torch.float16
        with pytest.raises(RuntimeError, match="expected scalar type Half but found Float"):
            rms_norm(x, w)  # the seed-5 shape: a float16 input meets a float32-kept weight
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Half"):
            layer_norm_fn(x.float(), w.half(), None)
        with pytest.raises(RuntimeError, match="found Float"):
            fused_rms_norm_affine(x, w, (8,), 1e-6)
        with pytest.raises(RuntimeError, match="apply_rotary_emb: `cos`"):
            apply_rotary_emb(x, torch.ones(4, 4), torch.ones(4, 4).half())
    assert [e.ok for e in events] == [True, False, False, False, False]
    assert "apex" not in sys.modules and "flash_attn.ops" not in sys.modules


def test_errors_are_classified_as_dtype_errors_or_not():
    from dtypelint.verify.harness import CPU_UNSUPPORTED, is_dtype_error

    assert is_dtype_error(RuntimeError("expected m1 and m2 to have the same dtype, but got: float != c10::Half"))
    assert is_dtype_error(RuntimeError("value cannot be converted to type c10::Half without overflow"))
    assert is_dtype_error(ValueError("Query/Key/Value should all have the same dtype"))
    assert not is_dtype_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied (16x8 and 64x64)"))
    assert not is_dtype_error(TypeError("unsupported operand type(s) for +: 'float' and 'NoneType'"))
    assert CPU_UNSUPPORTED.search("Unsupported dtype Half") and CPU_UNSUPPORTED.search(
        '"addmm_impl_cpu_" not implemented for \'Half\'')
