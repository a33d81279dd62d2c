"""RWKV-style time-mix layer whose chunked kernel wrapper asserts equal dtypes (seed 4)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def chunk_linear_attn(r, k, v, w, chunk_size=64):
    """Wrapper around a Triton kernel: all inputs must share one dtype."""
    assert r.dtype == k.dtype == v.dtype, "r, k and v must have the same dtype"
    B, T, H, D = r.shape
    out = torch.empty_like(v)
    state = r.new_zeros(B, H, D, D)
    for start in range(0, T, chunk_size):
        end = min(start + chunk_size, T)
        kv = k[:, start:end].transpose(1, 2).transpose(-1, -2) @ v[:, start:end].transpose(1, 2)
        out[:, start:end] = (r[:, start:end].transpose(1, 2) @ (state + kv)).transpose(1, 2)
        state = state * w
    return out


class TimeMix(nn.Module):
    def __init__(self, dim, n_head):
        super().__init__()
        self.n_head = n_head
        self.head_size = dim // n_head
        self.receptance = nn.Linear(dim, dim, bias=False)
        self.key = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim, bias=False)
        self.output = nn.Linear(dim, dim, bias=False)
        self.k_k = nn.Parameter(torch.ones(dim) * 0.85)
        self.k_a = nn.Parameter(torch.ones(dim))
        self.a_proj = nn.Linear(dim, dim)
        self.decay = nn.Parameter(torch.tensor(0.5))
        self.ln_x = nn.GroupNorm(n_head, dim, eps=64e-5)

    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        r = self.receptance(x)
        k = self.key(x)
        v = self.value(x)
        a = torch.sigmoid(self.a_proj(x))
        kk = k * self.k_k
        kk = F.normalize(kk.view(B, T, H, -1), dim=-1, p=2.0).view(B, T, C)
        k = k.addcmul(k * (a - 1), self.k_a.to(k.dtype))
        out = chunk_linear_attn(r.view(B, T, H, -1), k.view(B, T, H, -1), v.view(B, T, H, -1), self.decay)  # expect: DTL102
        out = out.reshape(B * T, C)
        out = self.ln_x(out).view(B, T, C)
        return self.output(out + kk * 0.0)
