"""Small, consistent sizes for the parameters model code names (``dim``, ``num_heads``, ...).

One table maps a parameter or config attribute name to a role; each role has one small
value, chosen so that heads divide the width (64 = 4 heads x 16) and key/value heads divide
the heads.  A name matches a role exactly or by its suffix (``text_hidden_size``,
``moe_intermediate_size``).
"""

from __future__ import annotations

VALUES = {
    "width": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "layers": 2, "ff": 128, "vocab": 128,
    "max_len": 64, "experts": 4, "top_k": 2, "channels": 32, "image": 16, "patch": 2, "batch": 2,
    "groups": 8, "rank": 16, "kernel": 3, "index": 0, "number": 1,
}
BATCH, SEQ = 2, 8

_EXACT = {
    "width": {"dim", "d_model", "hidden_size", "hidden_dim", "embed_dim", "n_embd", "n_embed", "model_dim",
              "width", "query_dim", "emb_dim", "embedding_dim", "d_embed", "input_dim", "in_dim", "out_dim",
              "in_features", "out_features", "dim_model", "input_size", "output_dim", "embed_size", "d_hidden",
              "num_features", "hidden_channels_dim", "key_dim", "value_dim", "context_dim", "cross_attention_dim",
              "time_embed_dim", "cond_dim", "d_word_vec", "attention_dim"},
    "heads": {"num_heads", "heads", "n_heads", "n_head", "num_attention_heads", "nhead", "num_head",
              "attention_heads", "num_q_heads", "encoder_attention_heads", "decoder_attention_heads",
              "n_attention_heads", "num_attn_heads", "attn_heads"},
    "kv_heads": {"num_key_value_heads", "n_kv_heads", "num_kv_heads", "n_kv_head", "kv_heads", "num_kv_head"},
    "head_dim": {"head_dim", "dim_head", "head_size", "d_head", "d_k", "d_v", "d_kv", "attention_head_dim",
                 "qk_head_dim", "v_head_dim", "kv_channels", "head_channels", "dim_per_head", "attention_head_size",
                 "qk_nope_head_dim", "qk_rope_head_dim"},
    "layers": {"num_layers", "n_layers", "depth", "num_hidden_layers", "n_layer", "num_blocks", "n_blocks",
               "encoder_layers", "decoder_layers", "num_encoder_layers", "num_decoder_layers", "nlayers"},
    "ff": {"d_ff", "intermediate_size", "ffn_dim", "mlp_dim", "hidden_features", "dim_feedforward", "ff_dim",
           "ffn_hidden_size", "d_inner", "inner_dim", "hidden", "mlp_hidden_dim", "expert_dim", "d_ffn",
           "moe_intermediate_size", "ffn_size", "encoder_ffn_dim", "decoder_ffn_dim", "dim_ff", "feedforward_dim"},
    "vocab": {"vocab_size", "vocab", "n_vocab", "num_embeddings", "num_tokens", "n_tokens", "vocabulary_size",
              "num_classes", "n_classes", "num_labels", "ntoken", "n_token"},
    "max_len": {"max_len", "max_seq_len", "max_position_embeddings", "max_seq", "block_size", "context_length",
                "max_length", "n_positions", "max_seq_length", "n_ctx", "max_positions", "max_sequence_length",
                "max_target_positions", "max_source_positions", "num_positions", "max_cache_len"},
    "experts": {"num_experts", "n_experts", "n_routed_experts", "num_local_experts", "moe_num_experts"},
    "top_k": {"top_k", "num_experts_per_tok", "topk", "n_activated_experts", "moe_topk", "experts_per_token"},
    "channels": {"in_channels", "out_channels", "channels", "num_channels", "in_chans", "in_ch", "out_ch", "ch",
                 "inner_channels", "base_channels", "model_channels", "conv_dim", "temb_channels",
                 "hidden_channels", "block_out_channels_0"},
    "image": {"image_size", "img_size", "resolution", "sample_size", "input_resolution"},
    "patch": {"patch_size"},
    "batch": {"batch", "batch_size", "max_batch_size", "bsz", "max_batch"},
    "groups": {"num_groups", "groups", "norm_num_groups", "resnet_groups", "n_groups"},
    "rank": {"rank", "lora_rank", "kv_lora_rank", "q_lora_rank", "low_rank", "proj_rank"},
    "kernel": {"kernel_size"},
    "index": {"layer_idx", "layer_id", "block_idx", "idx", "index", "layer_index", "block_id"},
    "number": {"layer_number", "layer_num"},
}
_SUFFIX = (  # checked in order: the more specific first
    ("kv_heads", ("_kv_heads", "key_value_heads")),
    ("head_dim", ("_head_dim", "_head_size")),
    ("heads", ("_heads",)),
    ("ff", ("_intermediate_size", "_ffn_dim", "_ff_dim", "_mlp_dim")),
    ("width", ("_hidden_size", "_embed_dim", "_model_dim", "_width")),
    ("layers", ("_layers",)),
    ("experts", ("_experts",)),
    ("channels", ("_channels",)),
    ("max_len", ("_max_position_embeddings", "_max_len")),
    ("vocab", ("_vocab_size",)),
)
_BY_NAME = {name: role for role, names in _EXACT.items() for name in names}


def role_of(name: str) -> str | None:
    n = name.lower()
    if n in _BY_NAME:
        return _BY_NAME[n]
    for role, suffixes in _SUFFIX:
        if n.endswith(suffixes):
            return role
    return None


def value_of(name: str) -> int | None:
    role = role_of(name)
    return VALUES[role] if role else None


KEEP_DEFAULT = {"kernel", "index", "number", "groups", "batch"}  # a default here is part of the design


def shrink(name: str, default):
    """The value to use for a parameter with a default: a size role's small value when the default is
    a larger int, else the default (bools and None stay)."""
    role = role_of(name)
    small = VALUES[role] if role and role not in KEEP_DEFAULT else None
    if small is None or isinstance(default, bool) or not isinstance(default, int):
        return default
    return small if default > small else default


def shrink_attribute(name: str, value):
    """Like :func:`shrink`, for a config attribute: also large ``*_dim`` / ``*_size`` / ``*_channel(s)``
    values with no known role (a vocoder's ``upsample_initial_channel``), which make a tiny model slow."""
    new = shrink(name, value)
    if new is value or new == value:
        if (isinstance(value, int) and not isinstance(value, bool) and value > 256 and role_of(name) is None
                and name.lower().endswith(("_dim", "_size", "_channels", "_channel"))):
            return VALUES["width"]
    return new


def guess_scalar(name: str, annotation: str = ""):
    """A value for a required non-size parameter, by its name or annotation; raises LookupError."""
    n = name.lower()
    ann = annotation.lower()
    if "eps" in n or "epsilon" in n:
        return 1e-6
    if "dropout" in n or "drop" in n or n.endswith(("_p", "_prob", "_rate")) or n == "p":
        return 0.0
    if "theta" in n or n in ("base", "rope_base", "rotary_base"):
        return 10000.0
    if n.endswith("ratio") or n == "mlp_ratio":
        return 4.0
    if n.endswith(("scale", "_factor", "temperature")):
        return 1.0
    if n in ("dtype", "device", "torch_dtype"):
        return None
    if n.startswith(("use_", "is_", "has_", "enable_", "with_", "add_", "apply_")) or n.endswith(
            ("_bias", "bias", "causal", "affine", "_flag")) or "bool" in ann:
        return False
    if "int" in ann:
        return 4
    if "float" in ann:
        return 1.0
    raise LookupError(name)
