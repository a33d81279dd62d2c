"""Token pyramid pooler: pooled levels are collected in a loop, a global token is appended, then `cat`.

Breaks in the `half` and `loaded` regimes: every pooled level keeps the activations' dtype, but the
global token is averaged in float32 (`tokens.float().mean(...)`, "for a stable mean"), so the list
holds one float32 element and `torch.cat` promotes the whole pyramid to float32; `self.mix` (float16
weight) then raises outside autocast. Under autocast the linear casts its input.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PyramidTokenPooler(nn.Module):
    def __init__(self, dim, pool_sizes=(2, 4), out_dim=None):
        super().__init__()
        self.pool_sizes = tuple(pool_sizes)
        self.level_proj = nn.ModuleList(nn.Linear(dim, dim) for _ in self.pool_sizes)
        self.level_norm = nn.LayerNorm(dim)
        self.mix = nn.Linear(dim, out_dim or dim)

    def pool(self, tokens, size):
        pooled = F.avg_pool1d(tokens.transpose(1, 2), kernel_size=size, stride=size)
        return pooled.transpose(1, 2)

    def forward(self, tokens):
        levels = []
        for size, proj in zip(self.pool_sizes, self.level_proj):
            levels.append(proj(self.pool(tokens, size)))
        global_token = tokens.float().mean(dim=1, keepdim=True)
        levels.append(global_token)
        pyramid = torch.cat(levels, dim=1)
        pyramid = self.mix(pyramid.to(self.mix.weight.dtype))  # expect: DTL101
        return self.level_norm(pyramid)
