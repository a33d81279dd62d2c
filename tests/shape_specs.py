"""How to build and run each fixture under ``fixtures/shapes`` with the runtime harness.

Key: the fixture's path below ``fixtures/shapes`` without ``.py`` (the first part is the shape), plus
``::variant`` when one file is run several ways.  ``breaks``: the regimes in which the hazard must fail
with a dtype error (those its docstring names); it must run cleanly in the others.  An empty tuple marks
a clean file (a twin or a false-positive trap): it must run cleanly in every regime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from dtypelint.verify import HarnessSpec

EVERY = ("autocast", "half", "loaded")
OUTSIDE_AUTOCAST = ("half", "loaded")


@dataclass(frozen=True)
class ShapeCase:
    spec: HarnessSpec
    breaks: tuple[str, ...]
    root: str = ""  # import root below ``fixtures/shapes/<shape>/`` (a package's parent folder)
    needs: tuple[str, ...] = ()  # modules the fixture imports from optional libraries: skipped when missing
    unrunnable: dict[str, str] = field(default_factory=dict)  # regime -> why the harness cannot run it


def x(*shape):
    return lambda t: (t.randn(*shape),)


def _gpt2_config(t):
    return dict(config=SimpleNamespace(hidden_size=32, activation_function="gelu_new", resid_pdrop=0.0,
                                       layer_norm_epsilon=1e-5))


def _pair(hazard: str, case: ShapeCase) -> dict[str, ShapeCase]:
    """A hazard and its clean twin (``<name>_ok``), built and called the same way."""
    path, _, variant = hazard.partition("::")
    twin = f"{path}_ok" + (f"::{variant}" if variant else "")
    return {hazard: case, twin: ShapeCase(case.spec, (), case.root, case.needs, case.unrunnable)}


def _image_merge_inputs(t):
    """Token ids with two image tokens (id 99) per row, and two image features per row."""
    ids = t.randint(0, 98, (2, 6))
    ids[:, 1:3] = 99
    return ids, t.randn(2, 2, 24)


TRANSFORMERS = ("transformers.activations", "transformers.pytorch_utils")
DIFFUSERS = ("diffusers.models.activations",)
TIMM = ("timm.layers",)

CASES: dict[str, ShapeCase] = {
    # 1. values that differ by path
    **_pair("paths/kv_cache_optional", ShapeCase(HarnessSpec(
        "CausalSelfAttention", dict(hidden_size=64, num_heads=4), lambda t: (t.randn(2, 8, 64), True)), OUTSIDE_AUTOCAST)),
    **_pair("paths/logit_temperature_early_return", ShapeCase(HarnessSpec(
        "RetrievalCrossAttention", dict(d_model=64, d_memory=32, n_heads=4, temperature=0.7),
        lambda t: (t.randn(2, 8, 64), t.randn(2, 5, 32))), OUTSIDE_AUTOCAST)),
    **_pair("paths/optional_final_norm", ShapeCase(HarnessSpec(
        "CausalLMHead", dict(hidden_size=64, vocab_size=100), x(2, 8, 64)), ("loaded",))),
    **_pair("paths/optional_code_embed", ShapeCase(HarnessSpec(
        "CodecTokenEncoder", dict(feature_dim=32, hidden_size=64, codebook_size=50),
        lambda t: (t.randint(0, 50, (2, 8)),)), ("loaded",))),
    **_pair("paths/fp32_attention_flag", ShapeCase(HarnessSpec(
        "PatchAttention", dict(dim=64, num_heads=4, attn_in_fp32=True), x(2, 8, 64)), OUTSIDE_AUTOCAST)),
    **_pair("paths/memory_slots_zeros_like", ShapeCase(HarnessSpec(
        "MemorySlotAttention", dict(dim=64), x(2, 8, 64)), OUTSIDE_AUTOCAST)),
    # 2. several tensors transformed together
    **_pair("iterables/genexpr_view_wkv", ShapeCase(HarnessSpec(
        "WKVTimeMix", dict(n_embd=32, n_head=2), x(2, 6, 32)), ("autocast",))),
    **_pair("iterables/map_rearrange_flash", ShapeCase(HarnessSpec(
        "CosineSimFlashAttention", dict(dim=32), x(2, 6, 32)), ("autocast",), needs=("einops",))),
    **_pair("iterables/unbind_rotary_listcomp", ShapeCase(HarnessSpec(
        "RotaryEncoderAttention", dict(hidden_size=64, num_heads=4), x(2, 6, 64)), OUTSIDE_AUTOCAST)),
    **_pair("iterables/cat_pyramid_loop", ShapeCase(HarnessSpec(
        "PyramidTokenPooler", dict(dim=32), x(2, 8, 32)), OUTSIDE_AUTOCAST)),
    **_pair("iterables/split_zip_branches", ShapeCase(HarnessSpec(
        "TriBranchBlock", dict(dim=32), x(2, 8, 32)), OUTSIDE_AUTOCAST)),
    # 3. callables whose body is out of reach but whose dtype behaviour is known
    **_pair("callables/act2fn_conv1d_mlp", ShapeCase(HarnessSpec(
        "BlockWithMLP", _gpt2_config, x(2, 6, 32)), OUTSIDE_AUTOCAST, needs=TRANSFORMERS)),
    **_pair("callables/get_activation_time_embed", ShapeCase(HarnessSpec(
        "TimeConditionedResBlock", dict(channels=16), lambda t: (t.randn(2, 16, 8, 8), t.rand(2) * 1000)),
        OUTSIDE_AUTOCAST, needs=DIFFUSERS)),
    **_pair("callables/gelu_dropout_identity", ShapeCase(HarnessSpec(
        "MlpBlock", dict(dim=32), x(2, 6, 32)), OUTSIDE_AUTOCAST)),
    **_pair("callables/timm_act_layer_se", ShapeCase(HarnessSpec(
        "DepthwiseSeparableSE", dict(channels=16), x(2, 16, 8, 8)), OUTSIDE_AUTOCAST, needs=TIMM)),
    **_pair("callables/einops_window_centroids", ShapeCase(HarnessSpec(
        "WindowCentroidAttention", dict(dim=32), x(2, 8, 32)), OUTSIDE_AUTOCAST, needs=("einops",))),
    **_pair("callables/checkpoint_gated_ffn", ShapeCase(HarnessSpec(
        "CheckpointedGLUBlock", dict(dim=32), x(2, 8, 32)), OUTSIDE_AUTOCAST)),
    # 4. kernels chosen at run time or called by keyword
    **_pair("kernels/retention_kernel_by_mode", ShapeCase(HarnessSpec(
        "MultiScaleRetention", dict(hidden_size=32, num_heads=2, mode="chunk"), x(2, 6, 32)), ("autocast",))),
    **_pair("kernels/retention_kernel_by_mode::recurrent", ShapeCase(HarnessSpec(
        "MultiScaleRetention", dict(hidden_size=32, num_heads=2, mode="recurrent"), x(2, 6, 32)), ("autocast",))),
    **_pair("kernels/gla_kernel_table_partial", ShapeCase(HarnessSpec(
        "SimpleGLA", dict(hidden_size=32, num_heads=2, mode="chunk"), x(2, 6, 32)), EVERY)),
    **_pair("kernels/gla_kernel_table_partial::fused_recurrent", ShapeCase(HarnessSpec(
        "SimpleGLA", dict(hidden_size=32, num_heads=2, mode="fused_recurrent"), x(2, 6, 32)), EVERY)),
    **_pair("kernels/linear_attention_wrapper_chain", ShapeCase(HarnessSpec(
        "EfficientAttention", dict(dim=32), x(2, 6, 32)), ("autocast",))),
    **_pair("kernels/hgrnlite/layers/hgrn", ShapeCase(HarnessSpec(
        "HGRNMixer", dict(hidden_size=32, mode="fused_recurrent"), x(2, 6, 32)), ("autocast",))),
    **_pair("kernels/hgrnlite/layers/hgrn::chunk", ShapeCase(HarnessSpec(
        "HGRNMixer", dict(hidden_size=32, mode="chunk"), x(2, 6, 32)), ("autocast",))),
    **_pair("kernels/retnet_project/src/lightretention/modeling", ShapeCase(HarnessSpec(
        "RetentionLayer", dict(embed_dim=32, num_heads=2), x(2, 6, 32)), EVERY, root="retnet_project/src")),
    # 5. files linted alone: the source, base class, kernel or keep list is in another file of the package
    **_pair("alone/speechattn/attention", ShapeCase(HarnessSpec(
        "SpeechDecoderSelfAttention", dict(hidden_size=32, num_heads=2),
        lambda t: (t.randn(2, 6, 32), t.arange(6).expand(2, 6))), OUTSIDE_AUTOCAST)),
    **_pair("alone/gatedmlp/mlp", ShapeCase(HarnessSpec(
        "GatedMLPLayer", dict(hidden_size=32, intermediate_size=64), x(2, 6, 32)), OUTSIDE_AUTOCAST)),
    **_pair("alone/xlstmlite/block", ShapeCase(HarnessSpec("MLSTMBlock", dict(dim=16), x(2, 6, 16)), ("autocast",))),
    **_pair("alone/adapterenc/modeling", ShapeCase(HarnessSpec(
        "AdapterEncoder", dict(d_model=32), x(2, 6, 32), module_outputs=("layers.0",)), ("loaded",))),
    # 6. submodules built conditionally
    **_pair("submodules/qk_norm_or_identity", ShapeCase(HarnessSpec(
        "FlashViTBlock", dict(dim=32), x(2, 6, 32)), ("autocast",))),
    **_pair("submodules/class_embedding_optional", ShapeCase(HarnessSpec(
        "ConditionedStem", dict(), lambda t: (t.randn(2, 4, 8, 8), t.randn(2, 32), t.tensor([1, 3]))),
        OUTSIDE_AUTOCAST)),
    **_pair("submodules/heads_moduledict", ShapeCase(HarnessSpec(
        "QueryDecoderWithHeads", dict(), x(2, 5, 32)), ("loaded",))),
    **_pair("submodules/norm_factory_loop", ShapeCase(HarnessSpec(
        "ResidualMLPStack", dict(dim=32), x(2, 5, 32)), OUTSIDE_AUTOCAST)),
    **_pair("submodules/parameterlist_qk_scales", ShapeCase(HarnessSpec(
        "ScaledFlashAttention", dict(dim=32), x(2, 5, 32)), ("autocast",))),
    # 7. outputs of known kernels
    **_pair("outputs/sdpa_fp32_output_proj", ShapeCase(HarnessSpec(
        "EncoderSelfAttention", dict(hidden_size=32, num_heads=2), x(2, 5, 32)), OUTSIDE_AUTOCAST)),
    **_pair("outputs/einsum_resampler_output", ShapeCase(HarnessSpec(
        "PerceiverResamplerAttention", dict(dim=32), lambda t: (t.randn(2, 7, 32), t.randn(2, 4, 32))),
        OUTSIDE_AUTOCAST)),
    **_pair("outputs/fp32_context_norm_loaded", ShapeCase(HarnessSpec(
        "ConditioningCrossAttention", dict(dim=32, context_dim=16), lambda t: (t.randn(2, 5, 32), t.randn(2, 3, 16))),
        ("loaded",))),
    **_pair("outputs/sdpa_scatter_routed_tokens", ShapeCase(HarnessSpec(
        "RoutedAttentionBlock", dict(dim=32), x(2, 6, 32)), OUTSIDE_AUTOCAST)),
    **_pair("outputs/index_mask_image_merge", ShapeCase(HarnessSpec(
        "ImageTextMerger", dict(), make_inputs=lambda t: (_image_merge_inputs(t), {})), ("autocast",))),
    **_pair("outputs/index_mask_image_merge::masked", ShapeCase(HarnessSpec(
        "MaskedImageTextMerger", dict(), make_inputs=lambda t: (_image_merge_inputs(t), {})), ("autocast",))),
    # false-positive traps: clean files that must stay quiet
    "traps/fp_einsum_broadcast_gain": ShapeCase(HarnessSpec("ChannelGainMixer", dict(dim=32), x(2, 5, 32)), ()),
    "traps/scalepkg/block": ShapeCase(HarnessSpec("ScaleShiftStack", dict(), x(2, 5, 32)), ()),
    "traps/fp_keep_list_subclass_override": ShapeCase(HarnessSpec("TextDecoderModel", dict(), x(2, 5, 32)), ()),
    "traps/fp_keep_list_subclass_override::inherited": ShapeCase(
        HarnessSpec("SpeechEncoderModel", dict(), x(2, 5, 32)), ()),
    "traps/fp_submodel_run_in_fp32": ShapeCase(HarnessSpec("VoiceConverter", dict(), x(2, 5, 16)), ()),
    "traps/fp_gather_int_index": ShapeCase(
        HarnessSpec("FirstTokenPooler", dict(hidden_size=32), x(2, 5, 32)), (),
        unrunnable={"autocast": "`torch.tensor(data, device=...)` cannot create a tensor on fake CUDA"}),
    "traps/fp_argmax_compare_masks": ShapeCase(
        HarnessSpec("HardRoutedPooler", dict(), lambda t: (t.randint(0, 50, (2, 6)),)), ()),
}

# Files that are not run on their own: kernels, helpers and base classes that the cases above import.
HELPERS = {
    "kernels/hgrnlite/ops/chunk.py", "kernels/hgrnlite/ops/recurrent.py",
    "kernels/retnet_project/src/lightretention/kernels.py",
    "alone/speechattn/rope.py", "alone/gatedmlp/base.py", "alone/xlstmlite/cells.py",
    "alone/adapterenc/pretrained.py", "traps/scalepkg/functional.py",
}


def fixture_path(key: str) -> str:
    """The fixture's path below ``fixtures/shapes``."""
    return key.split("::")[0] + ".py"


def import_root(key: str) -> str:
    """The folder below ``fixtures/shapes`` that goes on ``sys.path`` for this case."""
    shape = key.split("/")[0]
    root = CASES[key].root
    return f"{shape}/{root}" if root else shape
