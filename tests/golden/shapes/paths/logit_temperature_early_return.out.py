"""Retrieval cross-attention whose score helper returns early when no temperature is configured.

Breaks in the `half` and `loaded` regimes, on the path where `self.temperature is not None`: the
helper divides `scores.float()` by the temperature and returns float32, the softmax keeps float32,
and `probs @ value` multiplies float32 by float16 (matmul outside autocast). On the early-return
path the scores keep the activations' dtype; under autocast the matmul casts both operands.
"""
import math

import torch
import torch.nn as nn


def rescale_logits(scores, temperature=None):
    if temperature is None:
        return scores
    return scores.float() / temperature


class RetrievalCrossAttention(nn.Module):
    def __init__(self, d_model, d_memory, n_heads, temperature=None):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.temperature = temperature
        self.to_q = nn.Linear(d_model, d_model, bias=False)
        self.to_kv = nn.Linear(d_memory, 2 * d_model, bias=False)
        self.to_out = nn.Linear(d_model, d_model)

    def split_heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, hidden_states, retrieved):
        query = self.split_heads(self.to_q(hidden_states))
        key, value = map(self.split_heads, self.to_kv(retrieved).chunk(2, dim=-1))
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.d_head)
        scores = rescale_logits(scores, self.temperature)
        probs = scores.softmax(dim=-1)
        context = probs.to(value.dtype) @ value  # expect: DTL101
        context = context.transpose(1, 2).flatten(2)
        return self.to_out(context)
