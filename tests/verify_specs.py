"""How to build and call each golden/fixture module for the runtime harness.

Key: the golden's path below ``tests/golden`` (= the fixture's path below ``fixtures``)
without ``.py``, plus ``::Class`` when a file has several cases.  ``breaks``:
the regimes in which the finding says the unfixed code breaks (must reproduce there);
an empty tuple marks a correct twin (must run cleanly in every regime).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from dtypelint.verify import HarnessSpec


@dataclass(frozen=True)
class Case:
    spec: HarnessSpec
    breaks: tuple[str, ...]
    incomplete: str = ""  # the fix does not make the module run in ``breaks`` (documented, checked to still fail)


def x(*shape):
    return lambda t: (t.randn(*shape),)


CASES: dict[str, Case] = {
    # seed 1: q and k upcast, v not -> `attn @ v` / bmm / einsum with mixed operands outside autocast
    "seed1_dit_vanilla_attention": Case(HarnessSpec("VanillaAttention", dict(dim=64, num_heads=4), x(2, 8, 64)),
                                        ("half", "loaded")),
    "seed1_bmm_attention_helper": Case(HarnessSpec("CrossAttention", dict(query_dim=32, heads=2, dim_head=16),
                                                   x(2, 8, 32)), ("half", "loaded")),
    "seed1_bmm_attention_helper::einsum": Case(HarnessSpec("CrossAttention", dict(query_dim=32, heads=2, dim_head=16),
                                                           x(2, 8, 32), method="forward_einsum"), ("half", "loaded")),
    "seed1_ok_upcast_all": Case(HarnessSpec("VanillaAttentionFixed", dict(dim=64, num_heads=4), x(2, 8, 64)), ()),
    "seed1_ok_upcast_all::castback": Case(HarnessSpec("CastBackAttention", dict(dim=64, num_heads=4), x(2, 8, 64)), ()),
    # seed 2: fp32 temperature and F.normalize under autocast -> flash-attn gets fp32
    "seed2_cosine_flash": Case(HarnessSpec("CosineSelfAttention", dict(dim=64, num_heads=4), x(2, 8, 64)), ("autocast",)),
    "seed2_ok_captured_dtype": Case(HarnessSpec("CosineAttentionFixed", dict(dim=64, num_heads=4), x(2, 8, 64)), ()),
    "seed2_ok_captured_dtype::castatuse": Case(HarnessSpec("CosineAttentionCastAtUse", dict(dim=64, num_heads=4),
                                                           x(2, 8, 64)), ()),
    # seed 3a: fp32-built query norm, compute-dtype KV cache -> SDPA on the decode step
    "seed3a_tts_fp32_norm": Case(HarnessSpec(
        "DecoderSelfAttention", dict(dim=64, n_heads=4),
        lambda t: (t.randn(1, 1, 64), t.randn(1, 1, 1, 16), t.randn(1, 1, 1, 16), t.zeros(1, 4, 8, 16),
                   t.zeros(1, 4, 8, 16), 3)), ("loaded",)),
    # seed 3b: KV cache allocated without dtype= -> fp32 k/v after torch.cat
    "seed3b_kv_cache_default_dtype": Case(HarnessSpec("CachedAttention", dict(dim=64, heads=4), x(1, 4, 64)), ("half",)),
    "seed3_ok_cast_norm_and_cache": Case(HarnessSpec("DecoderAttention", dict(dim=64, n_heads=4), x(1, 4, 64)), ()),
    # seed 4: fp32 parameters promote k (addcmul) before a kernel wrapper that asserts equal dtypes
    "seed4_rwkv_chunk": Case(HarnessSpec("TimeMix", dict(dim=64, n_head=4), x(2, 8, 64)), ("autocast",)),
    "seed4_ok_cast_param_at_use": Case(HarnessSpec("TimeMixFixed", dict(dim=64), x(2, 8, 64)), ()),
    "seed4_ok_cast_param_at_use::autocastoff": Case(HarnessSpec("TimeMixAutocastOff", dict(dim=64), x(2, 8, 64)), ()),
    "crossfile/rwkvpkg/layer": Case(HarnessSpec("RWKV7Attention", dict(hidden_size=64, num_heads=4), x(2, 8, 64)),
                                    ("autocast",)),
    # seed 5: `_keep_in_fp32_modules` -> fp32 FFN output joins the fp16 residual (silent, or a crash later)
    "seed5_t5_keep_fp32": Case(HarnessSpec("Encoder", dict(d_model=64, d_ff=128, n_layers=2), x(2, 8, 64),
                                           module_outputs=("layers.0",)), ("loaded",)),
    "seed5_t5_no_cast_variant": Case(HarnessSpec("EncoderModel", dict(vocab=100, d_model=64, d_ff=128, n_layers=2),
                                                 lambda t: (t.randint(0, 100, (2, 8)),), module_outputs=("blocks.0",)),
                                     ("loaded",)),
    "seed5_ok_cast_back": Case(HarnessSpec("TinyEncoder", dict(d_model=64, d_ff=128, vocab=100), x(2, 8, 64)), ()),
    "crossfile/t5pkg/modeling": Case(HarnessSpec("Seq2SeqEncoder", dict(d_model=64, d_ff=128, n_layers=2), x(2, 8, 64),
                                                 module_outputs=("blocks.0",)), ("loaded",)),
    # DTL105: indexed writes with a float32 source / into a float32 cache (in-place writes are never autocast).
    # The MoE uses torch.where (data-dependent shapes: not runnable on fake tensors) and the cache is a plain
    # tensor attribute (not moved to the device with the module): both are verified on real CPU kernels.
    "dtl105_moe_dispatch": Case(HarnessSpec("SparseMoE", dict(dim=32, hidden=64, n_experts=4), x(2, 8, 32)),
                                ("half", "loaded")),
    "dtl105_moe_dispatch::cache": Case(HarnessSpec(
        "StaticKVCache", dict(batch=1, heads=2, head_dim=8, max_seq=16),
        lambda t: (t.randn(1, 2, 1, 8), t.randn(1, 2, 1, 8), t.tensor([3]))), ("half",)),
    "dtl105_ok_moe_dispatch": Case(HarnessSpec("SparseMoE", dict(dim=32, hidden=64, n_experts=4), x(2, 8, 32)), ()),
    "dtl105_ok_moe_dispatch::cache": Case(HarnessSpec(
        "StaticKVCache", dict(batch=1, heads=2, head_dim=8, max_seq=16),
        lambda t: (t.randn(1, 2, 1, 8), t.randn(1, 2, 1, 8), t.tensor([3]))), ()),
    # seed 2 variant: per-head LayerNorm on q/k runs in fp32 under autocast -> flash-attn varlen gets fp32
    "seed2_varlen_qknorm_flash": Case(HarnessSpec(
        "PackedAttention", dict(dim=64, num_heads=4),
        lambda t: (t.randn(16, 64), t.tensor([0, 8, 16], dtype=t.int32), 8)), ("autocast",)),
    # seed 4 variant: gated delta-rule kernel wrapper with equal-dtype contract
    "seed4_gated_delta_kernel": Case(HarnessSpec("GatedDeltaNet", dict(hidden_size=64, num_heads=4), x(2, 8, 64)),
                                     ("autocast",)),
    # DTL106: -1e9 / finfo(float32).min fill values overflow fp16 in masked_fill (raises in every regime)
    "dtl106_masked_attention_overflow": Case(HarnessSpec(
        "MaskedSelfAttention", dict(hidden_size=64, num_heads=4),
        lambda t: (t.randn(2, 8, 64), t.zeros(2, 8, dtype=t.bool), True)), ("autocast", "half", "loaded")),
    "dtl106_ok_finfo_mask": Case(HarnessSpec(
        "MaskedSelfAttentionFixed", dict(hidden_size=64, num_heads=4),
        lambda t: (t.randn(2, 8, 64), t.zeros(2, 8, dtype=t.bool), True)), ()),
    # false-positive regressions that still hold a real finding (in the regime named)
    "regressions/fp_caller_passes_fp32_into_kept_module": Case(HarnessSpec(
        "Model", dict(dim=16, depth=2), lambda t: (t.randn(2, 16), t.rand(2) * 1000, t.randn(2, 16))), ("half",)),
    "regressions/fp_router_kept_by_longer_path": Case(HarnessSpec("DecoderLayer", dict(), x(2, 4, 16)), ("half",)),
    "regressions/fp_unknown_input_to_fp32_filter": Case(HarnessSpec(
        "Vocoder", lambda t: dict(channels=4, activation=t.nn.SiLU()), x(2, 4, 32)), ("loaded",)),
    # analysis follow-up fixtures (fixes at the fp32 source, loop-variable modules, rotary chains)
    "regressions/fn_expert_loop_over_modulelist": Case(HarnessSpec(
        "SparseExperts", dict(dim=16, hidden=32, n_experts=3), x(2, 4, 16)), ("loaded",)),
    "regressions/fn_expert_loop_over_modulelist::dense": Case(HarnessSpec(
        "DenseExperts", dict(dim=16, hidden=32, n_experts=3), x(2, 4, 16)), ("loaded",)),
    "regressions/fn_rotary_inv_freq_in_forward": Case(HarnessSpec(
        "RotaryAttention",
        lambda t: dict(config=SimpleNamespace(num_attention_heads=4, hidden_size=64, rope_theta=10000.0)),
        x(2, 8, 64)), ("half", "loaded")),
    "seed3b_stream_cache_in_forward": Case(HarnessSpec(
        "StreamingSelfAttention", dict(dim=64, num_heads=4), lambda t: (t.randn(1, 4, 64), 2)), ("half", "loaded")),
    "regressions/fp_kept_cell_in_decode_loop": Case(
        HarnessSpec("TableModel", dict(hidden_size=32, out_channels=8), x(2, 5, 32)), ("half",),
        incomplete="the casts inside AttentionGRUCell fix its two linears, but `.half()` also converted the GRU cell "
                   "and the generator, which still receive the fp32 `features` the head creates: the model still "
                   "fails in the half regime (a local fix cannot repair it)"),
}


def module_of(key: str) -> tuple[str, str]:
    """(relative path without suffix, dotted module name relative to its import root)."""
    rel = key.split("::")[0]
    parts = rel.split("/")
    if parts[0] == "crossfile":
        return rel, ".".join(parts[1:])
    return rel, ".".join(parts)  # regressions/ is a package (it has an __init__.py)


def import_root(key: str) -> str:
    """The folder (below the golden/fixture root) that goes on sys.path."""
    return "crossfile" if key.startswith("crossfile/") else ""
