"""Perceiver-style resampler: latents attend to media features; the float32 einsum output reaches `to_out`.

Breaks in the `half` and `loaded` regimes: the attention weights are a softmax with
`dtype=torch.float32`, and the author upcasts `v` to match, so the second `torch.einsum` is legal but
returns float32; `to_out` (float16 weight) then receives a float32 input outside autocast. Under
autocast the einsum returns float16 and the linear casts anyway.
"""
import torch
import torch.nn as nn


class PerceiverResamplerAttention(nn.Module):
    def __init__(self, dim, dim_head=16, heads=2):
        super().__init__()
        inner = dim_head * heads
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.norm_media = nn.LayerNorm(dim)
        self.norm_latents = nn.LayerNorm(dim)
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, dim, bias=False)

    def split_heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.heads, -1).transpose(1, 2)

    def forward(self, media, latents):
        media = self.norm_media(media)
        latents = self.norm_latents(latents)
        q = self.split_heads(self.to_q(latents)) * self.scale
        kv_input = torch.cat((media, latents), dim=1)
        k, v = map(self.split_heads, self.to_kv(kv_input).chunk(2, dim=-1))
        sim = torch.einsum("bhid,bhjd->bhij", q, k)
        attn = sim.softmax(dim=-1, dtype=torch.float32)
        out = torch.einsum("bhij,bhjd->bhid", attn, v.float())
        out = out.transpose(1, 2).flatten(2)
        return self.to_out(out.to(self.to_out.weight.dtype))  # expect: DTL101
