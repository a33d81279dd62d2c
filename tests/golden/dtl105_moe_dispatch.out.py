"""Sparse mixture-of-experts layer and a decode-time KV cache (DTL105 fixture).

Two indexed writes receive float32 sources: the routing weights are computed in
float32 for a stable softmax and multiplied into the expert outputs before an
in-place `index_add_` into a low-precision buffer; and a decode
cache allocated with `torch.zeros(...)` and no `dtype=` is float32 while the keys
and values written into it by `index_copy` are in the compute dtype. In-place indexed writes are not
autocast, so they raise in every regime where the dtypes differ.
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
            out.index_add_(0, token_idx, contrib.to(out.dtype))  # expect: DTL105
        return out.reshape(batch, seq, dim)


class StaticKVCache(nn.Module):
    """Decode cache allocated up front; positions come from the caller."""

    def __init__(self, batch, heads, head_dim, max_seq, device=None):
        super().__init__()
        shape = (batch, heads, max_seq, head_dim)
        self.k_cache = torch.zeros(shape, device=device)  # no dtype=: float32 whatever the model's dtype
        self.v_cache = torch.zeros(shape, device=device)

    def reset(self):
        self.k_cache.zero_()
        self.v_cache.zero_()

    def forward(self, k, v, cache_position):
        k_all = self.k_cache.index_copy(2, cache_position, k.to(self.k_cache.dtype))  # expect: DTL105
        v_all = self.v_cache.index_copy(2, cache_position, v.to(self.v_cache.dtype))  # expect: DTL105
        return k_all, v_all
