"""Simple gated linear attention whose kernel comes from a dict and is bound with `functools.partial`.

Breaks in every regime (`autocast`, `half`, `loaded`): the per-head decay is computed Mamba-style as
`-torch.exp(self.A_log.float())`, which is float32 whatever the parameter's dtype, so the gate `g` is
float32 while q, k and v have the compute dtype. `self.attn_fn` is `partial(GLA_KERNELS[mode], ...)`,
and both kernels in the table `assert all(t.dtype == q.dtype for t in (k, v, g))`.
"""
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F


def chunk_simple_gla(q, k, v, g, scale=None):
    assert all(t.dtype == q.dtype for t in (k, v, g)), "chunk_simple_gla: q, k, v and g must share one dtype"
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    cum = g.cumsum(dim=1)
    decay = (cum[:, :, None, :] - cum[:, None, :, :]).exp().tril().permute(0, 3, 1, 2)
    scores = (q.transpose(1, 2) * scale) @ k.transpose(1, 2).transpose(-1, -2)
    return ((scores * decay) @ v.transpose(1, 2)).transpose(1, 2)


def fused_recurrent_simple_gla(q, k, v, g, scale=None):
    assert all(t.dtype == q.dtype for t in (k, v, g)), "fused_recurrent_simple_gla: q, k, v and g must share one dtype"
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    B, T, H, D = q.shape
    state = q.new_zeros(B, H, D, v.shape[-1])
    outs = []
    for t in range(T):
        state = state * g[:, t, :, None, None].exp() + k[:, t, :, :, None] * v[:, t, :, None, :]
        outs.append(((q[:, t, :, None, :] * scale) @ state).squeeze(-2))
    return torch.stack(outs, dim=1)


GLA_KERNELS = {"chunk": chunk_simple_gla, "fused_recurrent": fused_recurrent_simple_gla}


class SimpleGLA(nn.Module):
    def __init__(self, hidden_size, num_heads, mode="chunk"):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.qkv_proj = nn.Linear(hidden_size, 3 * hidden_size, bias=False)
        self.g_proj = nn.Linear(hidden_size, num_heads)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, num_heads + 1).float()))
        self.attn_fn = functools.partial(GLA_KERNELS[mode], scale=self.head_dim ** -0.5)
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        q, k, v = self.qkv_proj(hidden_states).view(B, T, 3, self.num_heads, self.head_dim).unbind(dim=2)
        q = F.silu(q)
        k = F.silu(k)
        g = -torch.exp(self.A_log.float()) * F.softplus(self.g_proj(hidden_states))
        o = self.attn_fn(q, k, v, g.to(k.dtype))  # expect: DTL102
        return self.o_proj(o.reshape(B, T, C))
