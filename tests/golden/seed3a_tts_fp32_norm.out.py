"""TTS decoder attention: an fp32-built query norm meets a compute-dtype KV cache (seed 3a)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, dtype=dtype))

    def forward(self, x):
        input_dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(input_dtype)


def project(linear, x):
    """Run a projection in its weight dtype and restore the input's dtype."""
    out = linear(x.to(linear.weight.dtype))
    return out.to(x.dtype)


def apply_rotary(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    rotated = torch.cat((-x2, x1), dim=-1)
    return x * cos + rotated * sin


class DecoderSelfAttention(nn.Module):
    def __init__(self, dim, n_heads, max_len=2048):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.q_norm = RMSNorm(dim, dtype=torch.float32)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.max_len = max_len

    def forward(self, x, cos, sin, k_cache, v_cache, start_pos: int):
        B, T, _ = x.shape
        q = project(self.wq, self.q_norm(x).to(x.dtype)).view(B, T, self.n_heads, self.head_dim)
        k = self.wk(x).view(B, T, self.n_heads, self.head_dim)
        v = self.wv(x).view(B, T, self.n_heads, self.head_dim)
        q = apply_rotary(q, cos, sin).transpose(1, 2)
        k = apply_rotary(k, cos, sin).transpose(1, 2)
        v = v.transpose(1, 2)
        # the cache is allocated in the compute dtype: slice assignment silently downcasts
        k_cache[:, :, start_pos:start_pos + T] = k
        v_cache[:, :, start_pos:start_pos + T] = v
        keys = k_cache[:, :, : start_pos + T]
        values = v_cache[:, :, : start_pos + T]
        out = F.scaled_dot_product_attention(q, keys, values, is_causal=T > 1)  # expect: DTL102
        return self.wo(out.transpose(1, 2).reshape(B, T, -1))
