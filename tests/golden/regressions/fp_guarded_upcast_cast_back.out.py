"""Regression (diffusers Upsample2D shape): an upcast guarded by a dtype test on a value of unknown
dtype, undone by the same test later.  The two branches are correlated; the analysis must not
claim the value leaves the function as float32."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .norms import make_norm


class Upsample(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = make_norm(channels)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, hidden_states):
        hidden_states = self.norm(hidden_states)
        dtype = hidden_states.dtype
        if dtype == torch.bfloat16:
            hidden_states = hidden_states.to(torch.float32)
        hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
        if dtype == torch.bfloat16:
            hidden_states = hidden_states.to(dtype)
        return self.conv(hidden_states)


class ResBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.up = Upsample(channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return self.conv1(self.up(x))
