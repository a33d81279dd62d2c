"""Padded and windowed attention that masks with -1e9 where float16 turns it into -inf silently (DTL107).

A batch row whose keys are all padding is all -inf after masking; softmax over it is NaN and the
NaN reaches the output.  None of these lines raises: `torch.where`, `+` and `*` round the
constant to float16 without the overflow check `masked_fill` has.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def additive_padding_bias(scores, keep_mask):
    """1 where a key is kept, 0 where it is padding -> 0 / -1e9 added to the scores."""
    return scores + (1.0 - keep_mask[:, None, None, :].to(scores.dtype)) * torch.finfo(scores.dtype).min  # expect: DTL107


class PaddedSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, additive=False, causal=False):
        super().__init__()
        self.causal = causal
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.additive = additive
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.proj = nn.Linear(hidden_size, hidden_size)

    def heads(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden_states, keep_mask):
        q, k, v = self.qkv(hidden_states).chunk(3, dim=-1)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.additive:
            scores = additive_padding_bias(scores, keep_mask)
        else:
            scores = torch.where(keep_mask[:, None, None, :], scores, torch.finfo(scores.dtype).min)  # expect: DTL107
        if self.causal:
            T = scores.shape[-1]
            future = torch.full((T, T), torch.finfo(scores.dtype).min, device=scores.device).triu(1)
            scores = scores + future.to(scores.dtype)  # expect: DTL107
        probs = F.softmax(scores, dim=-1)
        return self.proj((probs @ v).transpose(1, 2).flatten(2))


class WindowedCrossAttention(nn.Module):
    """Queries attend to memory slots inside their window; the bias is built once per call."""

    def __init__(self, dim, window):
        super().__init__()
        self.window = window
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)

    def window_bias(self, logits, slot_mask):
        T, S = logits.shape[-2:]
        pos = torch.arange(S, device=logits.device)
        inside = (pos[None, :] - torch.arange(T, device=logits.device)[:, None]).abs() <= self.window
        outside = (~(inside[None] & slot_mask[:, None, :])).to(logits.dtype)
        return logits - outside * torch.finfo(outside.dtype).max  # expect: DTL107

    def forward(self, x, memory, slot_mask):
        q = self.to_q(x)
        k, v = self.to_kv(memory).chunk(2, dim=-1)
        logits = torch.einsum("btd,bsd->bts", q, k) * q.shape[-1] ** -0.5
        logits = self.window_bias(logits, slot_mask)
        floor = logits.new_tensor(torch.finfo(logits.dtype).min)  # expect: DTL107
        logits = torch.maximum(logits, floor)
        return torch.einsum("bts,bsd->btd", logits.softmax(-1), v)
