"""Rotary and timestep tables computed in float32 and applied to float16 activations (DTL111).

The rotary module returns its float32 cos/sin without `.to(x.dtype)`, so `apply_rotary_pos_emb` turns the
stacked q and k float32; the DiT block adds a float32 sinusoidal timestep embedding to its hidden states.
In every regime the activations leave these ops in float32.
"""
import math

import torch
import torch.nn as nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, seq_len):
        t = torch.arange(seq_len, device=x.device).float()
        freqs = torch.outer(t, self.inv_freq.float())
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


class RotarySelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, hidden_size)
        self.rotary = RotaryEmbedding(self.head_dim)

    def apply_rotary_pos_emb(self, qk, cos, sin):
        return qk * cos.to(qk.dtype) + rotate_half(qk) * sin.to(qk.dtype)  # expect: DTL111

    def forward(self, hidden_states):
        B, T, _ = hidden_states.shape
        q = self.q_proj(hidden_states).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.rotary(q, T)
        q, k = self.apply_rotary_pos_emb(torch.stack([q, k]), cos, sin).unbind(0)
        return q, k


def timestep_embedding(timesteps, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=timesteps.device) / half)
    args = timesteps[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class DiTBlock(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, timesteps):
        h = self.proj(x)
        temb = timestep_embedding(timesteps, self.hidden_size)
        return h + temb[:, None, :].to(h.dtype)  # expect: DTL111
