"""Text-encoder attention that can run SDPA in float32 and forgets to cast the output back.

Breaks in the `half` and `loaded` regimes with `attention_in_fp32=True`: q, k and v are all upcast, so
SDPA itself is fine, but its output has the query's dtype (float32) and reaches `o_proj` (float16
weight) outside autocast. Under autocast SDPA returns float16 and the linear casts its input anyway.
"""
import torch.nn as nn
import torch.nn.functional as F


class EncoderSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, attention_in_fp32=True, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.attention_in_fp32 = attention_in_fp32
        self.dropout = dropout
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, hidden_size)
        self.v_proj = nn.Linear(hidden_size, hidden_size)
        self.o_proj = nn.Linear(hidden_size, hidden_size)

    def _shape(self, tensor, bsz):
        return tensor.view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, attention_mask=None):
        bsz, seq_len, _ = hidden_states.shape
        query = self._shape(self.q_proj(hidden_states), bsz)
        key = self._shape(self.k_proj(hidden_states), bsz)
        value = self._shape(self.v_proj(hidden_states), bsz)
        if self.attention_in_fp32:
            query, key, value = query.float(), key.float(), value.float()
        attn_output = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, seq_len, -1)
        return self.o_proj(attn_output.to(self.o_proj.weight.dtype))  # expect: DTL101
