"""Multi-scale retention layer that picks its kernel at run time and calls it by keyword.

Breaks in the `autocast` regime: `self.q_scale` is a float32 `[H, 1]` parameter, and under autocast
the query projection is float16, so `q * self.q_scale` promotes q alone to float32. Whichever kernel
`fn` names (`chunk_retention` asserts `q.dtype == k.dtype == v.dtype`, `recurrent_retention` raises on
a mismatch), the call `fn(q=q, k=k, v=v, ...)` fails. In `half` and `loaded` the scale is float16.
"""
import torch
import torch.nn as nn


def chunk_retention(q, k, v, decay):
    assert q.dtype == k.dtype == v.dtype, f"chunk_retention: q, k, v dtype mismatch ({q.dtype}, {k.dtype}, {v.dtype})"
    T = q.shape[1]
    pos = torch.arange(T, device=q.device)
    distance = (pos[:, None] - pos[None, :]).clamp(min=0)
    decay_mask = (decay[:, None, None] ** distance) * (pos[:, None] >= pos[None, :])
    scores = q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)
    out = (scores * decay_mask.to(scores.dtype)) @ v.transpose(1, 2)
    return out.transpose(1, 2)


def recurrent_retention(q, k, v, decay):
    if q.dtype != k.dtype or q.dtype != v.dtype:
        raise TypeError(f"recurrent_retention: inputs must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    B, T, H, D = q.shape
    state = q.new_zeros(B, H, D, v.shape[-1])
    outs = []
    for t in range(T):
        state = state * decay.to(state.dtype)[None, :, None, None] + k[:, t, :, :, None] * v[:, t, :, None, :]
        outs.append((q[:, t, :, None, :] @ state).squeeze(-2))
    return torch.stack(outs, dim=1)


class MultiScaleRetention(nn.Module):
    def __init__(self, hidden_size, num_heads, mode="chunk"):
        super().__init__()
        self.mode = mode
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.q_scale = nn.Parameter(torch.full((num_heads, 1), self.head_dim ** -0.5))
        self.register_buffer("decay", 1 - 2.0 ** (-5 - torch.arange(num_heads).float()))
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        shape = (B, T, self.num_heads, self.head_dim)
        q = self.q_proj(hidden_states).view(shape) * self.q_scale
        k = self.k_proj(hidden_states).view(shape)
        v = self.v_proj(hidden_states).view(shape)
        fn = chunk_retention if self.mode == "chunk" else recurrent_retention
        o = fn(q=q.to(k.dtype), k=k, v=v, decay=self.decay)  # expect: DTL102
        return self.o_proj(o.reshape(B, T, C))
