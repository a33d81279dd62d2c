"""Diffusers-style ResNet block whose time embedding goes through `get_activation` into a linear.

Breaks in the `half` and `loaded` regimes: the sinusoidal timestep embedding is computed from
`timesteps.float()` and an `exp` of a float32 range, so it is float32; the activation from
diffusers' `get_activation(act_fn)` keeps that dtype, and `time_emb_proj` (float16) receives a
float32 input outside autocast. (Diffusers' own UNet casts the embedding to the sample's dtype.)
"""
import math

import torch
import torch.nn as nn
from diffusers.models.activations import get_activation


def timestep_sinusoids(timesteps, dim, max_period=10000.0):
    half = dim // 2
    exponent = -math.log(max_period) * torch.arange(half, dtype=torch.float32, device=timesteps.device) / half
    args = timesteps[:, None].float() * torch.exp(exponent)[None, :]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class TimeConditionedResBlock(nn.Module):
    def __init__(self, channels, temb_channels=32, groups=4, act_fn="silu"):
        super().__init__()
        self.temb_channels = temb_channels
        self.norm1 = nn.GroupNorm(groups, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.nonlinearity = get_activation(act_fn)
        self.time_emb_proj = nn.Linear(temb_channels, channels)
        self.norm2 = nn.GroupNorm(groups, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, sample, timesteps):
        temb = timestep_sinusoids(timesteps, self.temb_channels)
        temb = self.nonlinearity(temb)
        temb = self.time_emb_proj(temb.to(self.time_emb_proj.weight.dtype))[:, :, None, None]  # expect: DTL101
        hidden = self.conv1(self.nonlinearity(self.norm1(sample))) + temb
        hidden = self.conv2(self.nonlinearity(self.norm2(hidden)))
        return sample + hidden
