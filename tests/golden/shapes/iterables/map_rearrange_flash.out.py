"""Cosine-similarity attention (lucidrains style) that reshapes q, k, v with `map` + einops, then flash-attn.

Breaks in the `autocast` regime: `l2norm` is `F.normalize`, whose norm CUDA autocast runs in float32,
so the normalised q and k come out float32 while v stays float16. `map(lambda t: rearrange(...))`
keeps each element's dtype, and `flash_attn_func` accepts only float16/bfloat16. Outside autocast
`F.normalize` keeps float16 and every input is float16.
"""
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange
from flash_attn import flash_attn_func


def l2norm(t, dim=-1):
    return F.normalize(t, dim=dim)


class CosineSimFlashAttention(nn.Module):
    def __init__(self, dim, heads=4, dim_head=16, scale=10.0):
        super().__init__()
        inner_dim = heads * dim_head
        self.heads = heads
        self.scale = scale
        self.norm = nn.LayerNorm(dim)
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Linear(inner_dim, dim, bias=False)

    def forward(self, x):
        x = self.norm(x)
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k = map(l2norm, (q, k))
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b n h d", h=self.heads), (q, k, v))
        out = flash_attn_func(q.to(v.dtype), k.to(v.dtype), v, softmax_scale=self.scale, causal=False)  # expect: DTL103
        out = rearrange(out, "b n h d -> b n (h d)")
        return self.to_out(out)
