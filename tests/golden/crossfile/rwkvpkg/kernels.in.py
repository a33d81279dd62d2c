"""Kernel wrappers of a linear-attention package (the Triton launch is elided)."""
import torch


def fused_recurrent(q, k, v, decay, scale=None, initial_state=None):
    if q.dtype != k.dtype or k.dtype != v.dtype:
        raise TypeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    B, T, H, K = q.shape
    scale = K ** -0.5 if scale is None else scale
    state = q.new_zeros(B, H, K, v.shape[-1]) if initial_state is None else initial_state
    outs = []
    for t in range(T):
        state = state * decay[:, t, :, :, None] + k[:, t, :, :, None] * v[:, t, :, None, :]
        outs.append((q[:, t, :, None, :] * scale @ state).squeeze(-2))
    return torch.stack(outs, dim=1), state


def token_shift(x, shift_state=None):
    if shift_state is None:
        shift_state = torch.zeros_like(x[:, :1])
    return torch.cat((shift_state, x[:, :-1]), dim=1)
