"""The torch API table (torch_api.toml) encodes the fact sheet's lists."""
import pytest

from dtypelint.analysis.api import load_api

api = load_api()


@pytest.mark.parametrize("op", ["matmul", "mm", "bmm", "baddbmm", "einsum", "linear", "conv2d", "scaled_dot_product_attention"])
def test_lower_precision_list(op):
    assert op in api.ac_lp


@pytest.mark.parametrize("op", ["exp", "log", "pow", "rsqrt", "layer_norm", "rms_norm", "group_norm", "normalize",
                                "square", "interpolate", "cosine_similarity", "logsumexp"])
def test_fp32_list_includes_composites(op):
    assert op in api.ac_fp32


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "sum", "cumsum", "prod", "norm"])
def test_fp32_unless_dtype(op):
    assert op in api.ac_fp32_opt


@pytest.mark.parametrize("op", ["addcmul", "addcdiv", "atan2", "index_put", "scatter_add"])
def test_promote_list(op):
    assert op in api.ac_promote


def test_cat_and_stack_are_ordinary_promotion_not_autocast_promote():
    assert "cat" not in api.ac_promote and "cat" in api.binary and "stack" in api.binary


@pytest.mark.parametrize("op", ["mean", "sigmoid", "gelu", "silu", "masked_fill", "dropout", "sqrt", "tanh"])
def test_unlisted_ops_keep_dtype(op):
    assert op in api.keep
    assert op not in api.ac_fp32


def test_casts_factories_and_modules():
    assert api.casts["float"] == "fp32" and api.casts["half"] == "float16" and api.casts["bfloat16"] == "bfloat16"
    assert "zeros" in api.default_float and "arange" in api.arange_like
    assert "zeros_like" in api.like and "new_zeros" in api.new
    assert api.module_kind["Linear"] == "linear"
    assert api.module_kind["LayerNorm"] == "norm_fp32"
    assert api.module_kind["Dropout"] == "keep"
    assert api.module_kind["Embedding"] == "embedding"


def test_sinks_and_contracts():
    assert api.sinks["flash_attn.flash_attn_func"].contract == "half-only"
    assert api.sinks["flash_attn.flash_attn_varlen_func"].contract == "half-only"
    assert api.sinks["flash_attn.flash_attn_qkvpacked_func"].args == ("qkv",)
    assert api.sinks["torch.nn.functional.scaled_dot_product_attention"].contract == "sdpa"
    assert api.sinks["xformers.ops.memory_efficient_attention"].contract == "equal"
    assert api.sinks["torch.bmm"].contract == "matmul"


def test_function_namespaces():
    assert api.torch_op("torch.nn.functional.normalize") == "normalize"
    assert api.torch_op("torch.softmax") == "softmax"
    assert api.torch_op("torch.linalg.vector_norm") == "vector_norm"
    assert api.torch_op("numpy.exp") is None
