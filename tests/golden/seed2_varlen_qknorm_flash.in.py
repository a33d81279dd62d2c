"""Packed-sequence attention with per-head q/k LayerNorm routed to flash-attn varlen (seed 2 variant).

Under CUDA autocast `nn.LayerNorm` runs in float32, so the normalized q and k reach the kernel as
float32 while v stays float16.  The backend choice was made on the projection's dtype, before the
norms promoted q and k (a stale guard).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from flash_attn import flash_attn_varlen_func, flash_attn_qkvpacked_func


class PackedAttention(nn.Module):
    def __init__(self, dim, num_heads, qk_norm=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=True)
        self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, cu_seqlens, max_seqlen):
        total, C = x.shape
        qkv = self.qkv(x).view(total, 3, self.num_heads, self.head_dim)
        fused_ok = qkv.dtype in (torch.float16, torch.bfloat16)
        q, k, v = qkv.unbind(1)
        q, k = self.q_norm(q), self.k_norm(k)
        if fused_ok:
            out = flash_attn_varlen_func(  # expect: DTL103
                q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen, causal=False
            )
        else:
            out = F.scaled_dot_product_attention(q[None].transpose(1, 2), k[None].transpose(1, 2),
                                                 v[None].transpose(1, 2))[0].transpose(0, 1)
        return self.proj(out.reshape(total, C))


class PackedQKVAttention(nn.Module):
    """The packed entry point keeps q, k and v in one tensor: no mixed dtypes possible."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, L, C = x.shape
        qkv = self.qkv(x).view(B, L, 3, self.num_heads, C // self.num_heads)
        return self.proj(flash_attn_qkvpacked_func(qkv, causal=True).reshape(B, L, C))
