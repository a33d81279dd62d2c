"""Decoder self-attention with an optional KV cache that the model creates on demand.

Breaks in the `half` and `loaded` regimes, on the path where `past_key_values is not None`
(`use_cache=True`): the cache starts from `torch.zeros(...)` without `dtype=`, which is float32,
so `torch.cat` promotes the cached keys and values to float32 while the query stays float16, and
SDPA rejects the mix. Without a cache the same call is fine; under autocast SDPA casts all three.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SegmentKVCache:
    """Grows the keys/values of one layer along the sequence axis."""

    def __init__(self, batch_size, num_heads, head_dim, device=None):
        self.key_states = torch.zeros(batch_size, num_heads, 0, head_dim, device=device)
        self.value_states = torch.zeros(batch_size, num_heads, 0, head_dim, device=device)

    def update(self, key_states, value_states):
        self.key_states = torch.cat([self.key_states.to(key_states.dtype), key_states], dim=-2)
        self.value_states = torch.cat([self.value_states.to(value_states.dtype), value_states], dim=-2)
        return self.key_states, self.value_states


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.qkv_proj = nn.Linear(hidden_size, 3 * hidden_size, bias=False)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states, use_cache=False):
        bsz, q_len, _ = hidden_states.shape
        past_key_values = None
        if use_cache:
            past_key_values = SegmentKVCache(bsz, self.num_heads, self.head_dim, device=hidden_states.device)
        qkv = self.qkv_proj(hidden_states).view(bsz, q_len, 3, self.num_heads, self.head_dim)
        query, key, value = qkv.permute(2, 0, 3, 1, 4)
        if past_key_values is not None:
            key, value = past_key_values.update(key, value)
        attn_output = F.scaled_dot_product_attention(query, key, value, is_causal=True)  # expect: DTL102
        attn_output = attn_output.transpose(1, 2).reshape(bsz, q_len, -1)
        return self.o_proj(attn_output)
