"""Attention with learnable per-head q/k scales held in an `nn.ParameterList` filled by `append`.

Breaks in the `autocast` regime: the scales are float32 `[H, D]` parameters, so under autocast
`q * self.qk_scales[0]` and `k * self.qk_scales[1]` are float32 while v (from the float16 projection)
is not, and `flash_attn_func` accepts only float16/bfloat16. In `half` and `loaded` the parameters are
float16 and all three inputs match.
"""
import torch
import torch.nn as nn
from flash_attn import flash_attn_func


class ScaledFlashAttention(nn.Module):
    def __init__(self, dim, num_heads=4, causal=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.causal = causal
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim, bias=False)
        self.qk_scales = nn.ParameterList()
        for _ in range(2):
            self.qk_scales.append(nn.Parameter(torch.ones(num_heads, self.head_dim)))
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context=None):
        context = x if context is None else context
        B, N, C = x.shape
        q = self.to_q(x).view(B, N, self.num_heads, self.head_dim)
        k, v = self.to_kv(context).view(B, context.shape[1], 2, self.num_heads, self.head_dim).unbind(2)
        q = q * self.qk_scales[0].to(q.dtype)
        k = k * self.qk_scales[1].to(k.dtype)
        out = flash_attn_func(q, k, v, causal=self.causal)  # expect: DTL103
        return self.to_out(out.reshape(B, N, C))
