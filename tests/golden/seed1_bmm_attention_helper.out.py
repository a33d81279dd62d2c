"""U-Net attention whose helper upcasts q and k for the scores but not v (seed 1, bmm/einsum)."""
import torch
from torch import nn


def attention_scores(query, key, scale, upcast=True):
    if upcast:
        query = query.float()
        key = key.float()
    scores = torch.baddbmm(
        torch.empty(query.shape[0], query.shape[1], key.shape[1], dtype=query.dtype, device=query.device),
        query,
        key.transpose(-1, -2),
        beta=0,
        alpha=scale,
    )
    return scores.softmax(dim=-1)


class CrossAttention(nn.Module):
    def __init__(self, query_dim, context_dim=None, heads=8, dim_head=64):
        super().__init__()
        inner_dim = dim_head * heads
        context_dim = context_dim or query_dim
        self.scale = dim_head ** -0.5
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_k = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_v = nn.Linear(context_dim, inner_dim, bias=False)
        self.to_out = nn.Linear(inner_dim, query_dim)

    def head_to_batch(self, t):
        b, n, d = t.shape
        return t.reshape(b, n, self.heads, d // self.heads).permute(0, 2, 1, 3).reshape(b * self.heads, n, -1)

    def forward(self, hidden_states, context=None):
        context = hidden_states if context is None else context
        q = self.head_to_batch(self.to_q(hidden_states))
        k = self.head_to_batch(self.to_k(context))
        v = self.head_to_batch(self.to_v(context))
        probs = attention_scores(q, k, self.scale)
        out = torch.bmm(probs.to(v.dtype), v)  # expect: DTL101
        b = hidden_states.shape[0]
        out = out.reshape(b, self.heads, -1, out.shape[-1]).permute(0, 2, 1, 3).reshape(b, -1, out.shape[-1] * self.heads)
        return self.to_out(out)

    def forward_einsum(self, hidden_states):
        q = self.head_to_batch(self.to_q(hidden_states))
        k = self.head_to_batch(self.to_k(hidden_states))
        v = self.head_to_batch(self.to_v(hidden_states))
        probs = attention_scores(q, k, self.scale)
        return torch.einsum("b i j, b j d -> b i d", probs.to(v.dtype), v)  # expect: DTL101
