"""Encoder self-attention that masks scores with magic numbers beyond float16's range (DTL106)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, dropout=0.1):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout)

    def split(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, padding_mask, causal=False):
        q = self.split(self.query(hidden_states))
        k = self.split(self.key(hidden_states))
        v = self.split(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(padding_mask[:, None, None, :], -1e9)  # expect: DTL106
        if causal:
            T = scores.shape[-1]
            future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), diagonal=1)
            scores = scores.masked_fill(future, torch.finfo(torch.float32).min)  # expect: DTL106
        probs = self.dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).transpose(1, 2).flatten(2)
        return self.out(context)


class EncoderLayer(nn.Module):
    def __init__(self, hidden_size, num_heads, causal=False):
        super().__init__()
        self.causal = causal
        self.attn = MaskedSelfAttention(hidden_size, num_heads)
        self.norm1 = nn.LayerNorm(hidden_size)
        self.ffn = nn.Sequential(nn.Linear(hidden_size, 4 * hidden_size), nn.GELU(), nn.Linear(4 * hidden_size, hidden_size))
        self.norm2 = nn.LayerNorm(hidden_size)

    def forward(self, hidden_states, padding_mask):
        hidden_states = self.norm1(hidden_states + self.attn(hidden_states, padding_mask, self.causal))
        return self.norm2(hidden_states + self.ffn(hidden_states))
