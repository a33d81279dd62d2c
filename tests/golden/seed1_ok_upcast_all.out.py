"""Correct twin of seed 1: upcast q, k and v together and cast the output back."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class VanillaAttentionFixed(nn.Module):
    def __init__(self, dim, num_heads=8, qkv_bias=True, fp32_attention=True):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.fp32_attention = fp32_attention

    def forward(self, x):
        B, N, C = x.shape
        input_dtype = x.dtype
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        if self.fp32_attention:
            q, k, v = q.float(), k.float(), v.float()
        with torch.autocast("cuda", enabled=False):
            attn = (q @ k.transpose(-2, -1)) * self.scale
            attn = attn.softmax(dim=-1)
            x = attn @ v
        x = x.to(input_dtype).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class CastBackAttention(nn.Module):
    """Upcast only the scores, then cast the probabilities back to v's dtype."""

    def __init__(self, dim, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        scores = q.float() @ k.float().transpose(-2, -1)
        probs = F.softmax(scores * (C // self.num_heads) ** -0.5, dim=-1, dtype=torch.float32).to(q.dtype)
        out = probs @ v
        out = torch.bmm(probs.flatten(0, 1), v.flatten(0, 1)).view_as(out)
        return self.proj(out.transpose(1, 2).reshape(B, N, C))
