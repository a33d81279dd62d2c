"""RWKV-7 style layer in another file: its fp32 parameters promote k before the strict kernel."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from rwkvpkg.kernels import fused_recurrent, token_shift


class RWKV7Attention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.x_r = nn.Parameter(torch.zeros(1, 1, hidden_size))
        self.x_k = nn.Parameter(torch.zeros(1, 1, hidden_size))
        self.r_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.w_proj = nn.Linear(hidden_size, hidden_size)
        self.k_k = nn.Parameter(torch.full((hidden_size,), 0.85))
        self.k_a = nn.Parameter(torch.ones(hidden_size))
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states):
        B, T, C = hidden_states.shape
        delta = token_shift(hidden_states) - hidden_states
        xr = hidden_states.addcmul(delta, self.x_r)
        xk = hidden_states.addcmul(delta, self.x_k)
        r = self.r_proj(xr)
        k = self.k_proj(xk)
        v = self.v_proj(xk)
        w = -F.softplus(-self.w_proj(xk)) - 0.5
        k = k * self.k_a
        shape = (B, T, self.num_heads, self.head_dim)
        o, _ = fused_recurrent(r.view(shape), k.view(shape), v.view(shape), w.view(shape).exp())  # expect: DTL102
        return self.o_proj(o.reshape(B, T, C))


class RWKV7Block(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden_size)
        self.attn = RWKV7Attention(hidden_size, num_heads)

    def forward(self, x):
        return x + self.attn(self.ln1(x))
