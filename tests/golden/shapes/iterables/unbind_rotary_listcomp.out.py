"""Packed-QKV encoder attention: `unbind` splits q, k, v, a list comprehension rotates q and k, then SDPA.

Breaks in the `half` and `loaded` regimes: the rotary tables are built in `forward` from
`torch.arange(...).float()` and stay float32, so the comprehension `[t * cos + rotate_half(t) * sin
for t in (q, k)]` makes q and k float32 while v (the third element of `unbind`) stays float16; SDPA
outside autocast rejects the mix. Under autocast SDPA casts all three inputs.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotary_cos_sin(seq_len, dim, base, device):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device).float() / dim))
    positions = torch.arange(seq_len, device=device).float()
    freqs = torch.outer(positions, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class RotaryEncoderAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, rotary_base=10000.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.rotary_base = rotary_base
        self.Wqkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.out_proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        B, N, _ = hidden_states.shape
        qkv = self.Wqkv(hidden_states).view(B, N, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.unbind(dim=2)
        cos, sin = rotary_cos_sin(N, self.head_dim, self.rotary_base, hidden_states.device)
        cos, sin = cos[:, None, :], sin[:, None, :]
        q, k = [t * cos + rotate_half(t) * sin for t in (q, k)]
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(q.to(v.dtype), k.to(v.dtype), v)  # expect: DTL102
        return self.out_proj(attn.transpose(1, 2).reshape(B, N, -1))
