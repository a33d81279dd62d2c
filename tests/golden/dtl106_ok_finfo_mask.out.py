"""Correct twin of the DTL106 fixture: masks use the scores' own dtype range or -inf."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedSelfAttentionFixed(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)
        self.out = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states, padding_mask, causal=False):
        B, T, C = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(B, T, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(padding_mask[:, None, None, :], torch.finfo(scores.dtype).min)
        if causal:
            future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(v.dtype)
        return self.out(torch.matmul(probs, v).transpose(1, 2).reshape(B, T, C))


class AdditiveMask(nn.Module):
    """Builds an additive mask in the activation dtype, clamped to the representable range."""

    def forward(self, scores, attention_mask):
        min_value = torch.finfo(scores.dtype).min
        additive = (1.0 - attention_mask[:, None, None, :].to(scores.dtype)) * min_value
        scores = scores + additive
        return scores.clamp(min=min_value, max=-min_value)


def fp32_scores(q, k, mask):
    with torch.autocast("cuda", enabled=False):
        scores = q.float() @ k.float().transpose(-1, -2)
        scores = scores.masked_fill(mask, -1e9)
    return scores.softmax(-1).to(q.dtype)
