"""Correct twin of dtl105_moe_dispatch.py: every indexed write casts to the destination's dtype.

The routing contribution is cast to the output buffer's dtype before `index_add_`,
and the cache is brought to the dtype of the keys and values it receives.
"""

import torch
import torch.nn.functional as F
from torch import nn


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class SparseMoE(nn.Module):
    def __init__(self, dim, hidden, n_experts, top_k=2):
        super().__init__()
        self.router = nn.Linear(dim, n_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(n_experts)])
        self.top_k = top_k

    def forward(self, hidden_states):
        batch, seq, dim = hidden_states.shape
        flat = hidden_states.reshape(-1, dim)
        logits = self.router(flat)
        probs = F.softmax(logits, dim=-1, dtype=torch.float32)  # stable routing in fp32
        weights, chosen = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e in range(len(self.experts)):
            expert = self.experts[e]
            token_idx, slot = torch.where(chosen == e)
            contrib = expert(flat[token_idx]) * weights[token_idx, slot, None]
            out.index_add_(0, token_idx, contrib.to(out.dtype))
        return out.reshape(batch, seq, dim)


class StaticKVCache(nn.Module):
    """Decode cache allocated up front; positions come from the caller."""

    def __init__(self, batch, heads, head_dim, max_seq, device=None):
        super().__init__()
        shape = (batch, heads, max_seq, head_dim)
        self.k_cache = torch.zeros(shape, device=device)
        self.v_cache = torch.zeros(shape, device=device)

    def reset(self):
        self.k_cache.zero_()
        self.v_cache.zero_()

    def forward(self, k, v, cache_position):
        k_all = self.k_cache.to(k.dtype).index_copy(2, cache_position, k)
        v_all = self.v_cache.to(v.dtype).index_copy(2, cache_position, v)
        return k_all, v_all
