"""Speech decoder self-attention; its rotary module and helper live in `rope.py` (imported relatively).

Breaks in the `half` and `loaded` regimes: `RotaryEmbedding.forward` (in another file) returns
float32 cos/sin (`position_ids.float() * inv_freq.float()`) and nothing casts them back, so the
rotated query and key are float32 while the value keeps float16; SDPA outside autocast raises. Must be
flagged when this file is linted alone. Under autocast SDPA casts all three inputs.
"""
import torch.nn as nn
import torch.nn.functional as F

from .rope import RotaryEmbedding, rotate_half


class SpeechDecoderSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, hidden_size)
        self.v_proj = nn.Linear(hidden_size, hidden_size)
        self.out_proj = nn.Linear(hidden_size, hidden_size)
        self.rotary = RotaryEmbedding(self.head_dim)

    def forward(self, hidden_states, position_ids):
        bsz, tgt_len, _ = hidden_states.shape
        shape = (bsz, tgt_len, self.num_heads, self.head_dim)
        query = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        key = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        value = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = self.rotary(value, position_ids)
        query = query * cos + rotate_half(query) * sin
        key = key * cos + rotate_half(key) * sin
        attn_output = F.scaled_dot_product_attention(query.to(value.dtype), key.to(value.dtype), value, dropout_p=0.0, is_causal=True)  # expect: DTL102
        attn_output = attn_output.transpose(1, 2).reshape(bsz, tgt_len, -1)
        return self.out_proj(attn_output)
