"""Vision-transformer attention with a config flag that runs the score computation in float32.

Breaks in the `half` and `loaded` regimes, on the path where `self.attn_in_fp32` is true: the flag
upcasts only the query and the key, the value keeps the activations' dtype, and SDPA (outside
autocast) requires query, key and value of one dtype. With the flag off every input stays float16;
under autocast SDPA casts all three to float16.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchAttention(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=True, attn_in_fp32=False, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.attn_in_fp32 = attn_in_fp32
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if self.attn_in_fp32:
            q = q.float()
            k = k.float()
        else:
            q = q * 1.0
        x = F.scaled_dot_product_attention(q.to(v.dtype), k.to(v.dtype), v)  # expect: DTL102
        x = x.to(v.dtype).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        return self.proj_drop(x)
