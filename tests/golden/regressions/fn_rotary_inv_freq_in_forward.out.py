"""Regression (false negative): rotary tables computed in `forward` from config scalars.

`1.0 / (self.rope_theta ** (torch.arange(0, dim, 2).float() / dim))` mixes Python scalars the
analysis cannot see (`self.rope_theta`, `self.head_dim` from the config) with a float32 tensor: the
result is float32 whatever those scalars are, and so are `freqs`, `emb` and `emb.cos()`.  The rotary
helper then returns float32 queries and keys (the values stay in the compute dtype), which SDPA
rejects in a `.half()` or fp16-loaded model.  The twin module casts the tables to `x.dtype`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class RotaryAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.rope_theta = config.rope_theta
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def rotary(self, seq_len, device):
        inv_freq = 1.0 / (self.rope_theta ** (torch.arange(0, self.head_dim, 2, device=device).float() / self.head_dim))
        t = torch.arange(seq_len, device=device).float()
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(B, T, 3, self.num_heads, self.head_dim).transpose(1, 3).unbind(2)
        cos, sin = self.rotary(T, hidden_states.device)
        q = apply_rotary_pos_emb(q, cos, sin).to(q.dtype)
        k = apply_rotary_pos_emb(k, cos, sin).to(k.dtype)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # expect: DTL102
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))


class RotaryAttentionCastTables(RotaryAttention):
    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(B, T, 3, self.num_heads, self.head_dim).transpose(1, 3).unbind(2)
        cos, sin = self.rotary(T, hidden_states.device)
        cos, sin = cos.to(hidden_states.dtype), sin.to(hidden_states.dtype)
        q = apply_rotary_pos_emb(q, cos, sin)
        k = apply_rotary_pos_emb(k, cos, sin)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, C))
