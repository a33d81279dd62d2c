"""Mixture-of-depths block: routed tokens attend in float32 and are scattered back into the stream.

Breaks in the `half` and `loaded` regimes: the selected tokens go through SDPA with q, k and v upcast
(`.float()`), so its output is float32, and `hidden.scatter(1, index, attn)` writes that float32
source into the float16 stream, which `scatter` rejects (in-place or not, it is never autocast). The
gather index comes from `topk(...).indices` (int64) and plays no part in the dtype. Under autocast
SDPA returns float16, which matches the float16 stream.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RoutedAttentionBlock(nn.Module):
    def __init__(self, dim, num_heads=2, capacity=0.5):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.capacity = capacity
        self.in_proj = nn.Linear(dim, dim)
        self.router = nn.Linear(dim, 1, bias=False)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        hidden = self.in_proj(x)
        k_top = max(1, int(N * self.capacity))
        top_idx = self.router(hidden).squeeze(-1).topk(k_top, dim=-1).indices
        index = top_idx[..., None].expand(-1, -1, C)
        selected = torch.gather(hidden, 1, index)
        q, k, v = self.qkv(selected).view(B, k_top, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        attn = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
        attn = attn.transpose(1, 2).reshape(B, k_top, C)
        hidden = hidden.scatter(1, index, attn.to(hidden.dtype))  # expect: DTL105
        return x + self.out_proj(hidden)
