"""Window-centroid attention written with einops (`rearrange`, `reduce`, `repeat`, `einsum`).

Breaks in the `half` and `loaded` regimes: the window centroids are reduced from `q.float()` ("mean
in float32"), so the keys are float32 while the queries stay float16; `einops.einsum` contracts over
`d` (a real matmul) and raises on the mixed operands outside autocast. Under autocast the einsum
casts both operands.
"""
import torch.nn as nn
from einops import einsum, rearrange, reduce, repeat


class WindowCentroidAttention(nn.Module):
    def __init__(self, dim, heads=4, dim_head=8, window=4):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.window = window
        self.scale = dim_head ** -0.5
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_v = nn.Linear(dim, inner, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x):
        q = rearrange(self.to_q(x), "b n (h d) -> b h n d", h=self.heads)
        v = rearrange(self.to_v(x), "b n (h d) -> b h n d", h=self.heads)
        centroids = reduce(q.float(), "b h (w p) d -> b h w d", "mean", p=self.window)
        values = reduce(v, "b h (w p) d -> b h w d", "mean", p=self.window)
        sim = einsum(q, centroids.to(q.dtype), "b h i d, b h j d -> b h i j") * self.scale  # expect: DTL101
        attn = sim.softmax(dim=-1)
        pooled = einsum(attn, values, "b h i j, b h j d -> b h i d")
        gate = repeat(self.to_v.weight.new_ones(self.heads), "h -> b h 1 1", b=x.shape[0])
        out = rearrange(pooled * gate, "b h n d -> b n (h d)")
        return self.to_out(out)
