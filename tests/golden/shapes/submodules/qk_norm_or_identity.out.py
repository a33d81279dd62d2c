"""ViT attention with optional QK-norm (`nn.LayerNorm(head_dim) if qk_norm else nn.Identity()`) and flash-attn.

Breaks in the `autocast` regime with `qk_norm=True`: CUDA autocast runs `layer_norm` in float32, so the
normalised q and k are float32 while v stays float16, and `flash_attn_func` accepts only
float16/bfloat16. With `qk_norm=False` the `nn.Identity` keeps float16. Outside autocast the norms
return the input's dtype.
"""
import torch.nn as nn
from flash_attn import flash_attn_func


class FlashQKNormAttention(nn.Module):
    def __init__(self, dim, num_heads=4, qkv_bias=False, qk_norm=True, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.unbind(2)
        q, k = self.q_norm(q), self.k_norm(k)
        x = flash_attn_func(q.to(v.dtype), k.to(v.dtype), v, softmax_scale=self.scale)  # expect: DTL103
        x = x.reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class FlashViTBlock(nn.Module):
    def __init__(self, dim, num_heads=4, mlp_ratio=2, qk_norm=True):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = FlashQKNormAttention(dim, num_heads=num_heads, qk_norm=qk_norm)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * mlp_ratio), nn.GELU(), nn.Linear(dim * mlp_ratio, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))
