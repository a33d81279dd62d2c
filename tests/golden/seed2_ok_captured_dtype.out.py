"""Correct twin of seed 2: the dtype is captured after the projection and restored at the kernel."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from flash_attn import flash_attn_func as fa_func


class CosineAttentionFixed(nn.Module):
    def __init__(self, dim, num_heads, max_logit_scale=100.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.proj = nn.Linear(dim, dim)
        self.logit_scale = nn.Parameter(torch.full((1, 1, num_heads, 1), math.log(10.0)))
        self.max_logit = math.log(max_logit_scale)

    def forward(self, x):
        B, L, C = x.shape
        qkv = self.qkv(x).view(B, L, 3, self.num_heads, self.head_dim)
        main_dtype = qkv.dtype
        q, k, v = qkv.unbind(dim=2)
        scale = self.logit_scale.clamp_max(self.max_logit).exp()
        q = F.normalize(q, dim=-1) * scale
        k = F.normalize(k, dim=-1)
        out = fa_func(q.to(main_dtype), k.to(main_dtype), v.to(main_dtype), softmax_scale=1.0)
        return self.proj(out.reshape(B, L, C))


class CosineAttentionCastAtUse(nn.Module):
    """Alternative fix: cast the temperature and the normalized tensors back where they are used."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.logit_scale = nn.Parameter(torch.zeros(1, 1, num_heads, 1))

    def forward(self, x):
        B, L, C = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.num_heads, -1).unbind(dim=2)
        scale = self.logit_scale.exp().to(q.dtype)
        q = F.normalize(q, dim=-1).to(v.dtype) * scale
        k = F.normalize(k, dim=-1).type_as(v)
        return fa_func(q, k, v).reshape(B, L, C)
