"""Residual MLP stack whose norms come from a factory helper, built in a loop into `nn.ModuleList`s.

Breaks in the `half` and `loaded` regimes with `norm_kind="rms"`: `build_norm` returns
`Fp32RMSNorm`, which normalises `x.float()` and never casts back, so every norm in the loop returns
float32 and `proj(norm(x))` feeds a float32 input to a float16 `nn.Linear` outside autocast. With
`norm_kind="layer"` the factory gives `nn.LayerNorm`, which keeps the input's dtype. Under autocast
the linear casts its input.
"""
import torch
import torch.nn as nn


class Fp32RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x = x.float()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.scale


def build_norm(kind, dim):
    if kind == "rms":
        return Fp32RMSNorm(dim)
    return nn.LayerNorm(dim)


class ResidualMLPStack(nn.Module):
    def __init__(self, dim, depth=2, norm_kind="rms"):
        super().__init__()
        self.norms = nn.ModuleList()
        self.projs = nn.ModuleList()
        for _ in range(depth):
            self.norms.append(build_norm(norm_kind, dim))
            self.projs.append(nn.Sequential(nn.Linear(dim, dim), nn.GELU()))
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        for norm, proj in zip(self.norms, self.projs):
            x = x + proj(norm(x).to(x.dtype))  # expect: DTL101
        return self.out(x)
