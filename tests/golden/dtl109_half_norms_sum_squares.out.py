"""Norms and statistics that square float16 activations before reducing them (DTL109).

Any activation above 256 in magnitude squares past 65504 and the mean is inf; the norm then
returns 0 or NaN for that token.  `x.var()` overflows once the spread passes 256.
"""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)  # expect: DTL109
        return self.weight * x * torch.rsqrt(variance + self.eps)


def channel_energy(h):
    """Per-channel energy of a feature map, used to gate channels."""
    sq = h.float() * h.float()
    return sq.sum(dim=(2, 3), keepdim=True)  # expect: DTL109


class GatedConvBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.gate = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        h = self.conv(x)
        rms = (channel_energy(h) / h[0, 0].numel()).sqrt()
        return x + h * torch.sigmoid(self.gate(rms.to(self.gate.weight.dtype)))


class StatsPoolingHead(nn.Module):
    """Speaker-embedding style pooling: mean and standard deviation over time, then a projection."""

    def __init__(self, dim, out_dim, use_var=True):
        super().__init__()
        self.use_var = use_var
        self.proj = nn.Linear(2 * dim, out_dim)

    def forward(self, frames):
        mu = frames.mean(dim=1)
        if self.use_var:
            spread = torch.var(frames.float(), dim=1, unbiased=False)  # expect: DTL109
        else:
            spread = torch.square((frames - mu[:, None]).float()).mean(dim=1)  # expect: DTL109
        return self.proj(torch.cat([mu, spread], dim=-1).to(self.proj.weight.dtype))
