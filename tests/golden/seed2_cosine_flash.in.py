"""Cosine attention with a learnable log-temperature feeding flash-attn (seed 2)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from flash_attn import flash_attn_func


class CosineSelfAttention(nn.Module):
    def __init__(self, dim, num_heads, max_logit_scale=100.0, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.proj = nn.Linear(dim, dim)
        # learnable per-head temperature, stored as a log (fp32 parameter)
        self.logit_scale = nn.Parameter(torch.full((1, num_heads, 1, 1), math.log(10.0)))
        self.max_logit = math.log(max_logit_scale)
        self.dropout = dropout

    def forward(self, x):
        B, L, C = x.shape
        qkv = self.qkv(x).view(B, L, 3, self.num_heads, self.head_dim)
        # decided on the projection's dtype, before normalize/scale promote q and k
        use_flash = qkv.dtype != torch.float32
        q, k, v = qkv.unbind(dim=2)
        scale = self.logit_scale.clamp_max(self.max_logit).exp()
        q = F.normalize(q, dim=-1) * scale.transpose(1, 2)
        k = F.normalize(k, dim=-1)
        if use_flash:
            out = flash_attn_func(q, k, v, dropout_p=self.dropout, softmax_scale=1.0)  # expect: DTL103
        else:
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), scale=1.0)
            out = out.transpose(1, 2)
        return self.proj(out.reshape(B, L, C))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = CosineSelfAttention(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x))))
        return x
