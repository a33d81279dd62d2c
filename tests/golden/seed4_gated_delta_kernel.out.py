"""Gated linear-attention layer whose kernel wrapper rejects mixed dtypes (seed 4 variant).

The wrapper raises on mixed dtypes, which makes it a dtype-strict sink.  A `[1]`-shaped learnable
scale promotes k under autocast; a 0-dim one (`beta_scale`) does not (facts §2.1).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def chunk_gated_delta_rule(q, k, v, beta, chunk_size=64):
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError("q, k and v must share a dtype")
    B, T, H, D = q.shape
    state = q.new_zeros(B, H, D, v.shape[-1])
    outputs = []
    for start in range(0, T, chunk_size):
        qc, kc, vc = q[:, start:start + chunk_size], k[:, start:start + chunk_size], v[:, start:start + chunk_size]
        outputs.append(torch.einsum("bthd,bhde->bthe", qc, state))
        state = state + torch.einsum("bthd,bthe->bhde", kc * beta[:, start:start + chunk_size, :, None], vc)
    return torch.cat(outputs, dim=1)


class GatedDeltaNet(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.b_proj = nn.Linear(hidden_size, num_heads, bias=False)
        self.k_scale = nn.Parameter(torch.ones(1))
        self.beta_scale = nn.Parameter(torch.tensor(1.0))
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        shape = (B, T, self.num_heads, self.head_dim)
        q = F.silu(self.q_proj(hidden_states)).view(shape)
        k = F.silu(self.k_proj(hidden_states)).view(shape) * self.k_scale
        v = self.v_proj(hidden_states).view(shape)
        beta = self.b_proj(hidden_states).sigmoid() * self.beta_scale
        o = chunk_gated_delta_rule(q, k.to(q.dtype), v, beta)  # expect: DTL102
        return self.o_proj(o.reshape(B, T, C))
