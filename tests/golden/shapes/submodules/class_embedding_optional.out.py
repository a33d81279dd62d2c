"""Diffusion UNet stem with an optional class embedding (`... if num_class_embeds else None`).

Breaks in the `half` and `loaded` regimes when the model has a class embedding: the class labels are
turned into sinusoidal features in float32 (`labels.float()` times a float32 frequency table), and
inside `if self.class_embedding is not None:` that float32 tensor reaches `class_embedding`'s first
linear (float16 weight) outside autocast. (diffusers casts the labels' projection to the sample's
dtype here.) Under autocast the linear casts its input.
"""
import math

import torch
import torch.nn as nn


def label_features(labels, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=labels.device) / half)
    args = labels.float()[:, None] * freqs[None]
    return torch.cat([args.sin(), args.cos()], dim=-1)


class ConditionedStem(nn.Module):
    def __init__(self, in_channels=4, channels=16, time_embed_dim=32, num_class_embeds=10):
        super().__init__()
        self.time_embed_dim = time_embed_dim
        self.conv_in = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.time_embedding = nn.Sequential(nn.Linear(time_embed_dim, time_embed_dim), nn.SiLU())
        self.class_embedding = (
            nn.Sequential(nn.Linear(time_embed_dim, time_embed_dim), nn.SiLU()) if num_class_embeds else None
        )
        self.emb_proj = nn.Linear(time_embed_dim, channels)

    def forward(self, sample, temb, class_labels=None):
        emb = self.time_embedding(temb)
        if self.class_embedding is not None:
            class_emb = label_features(class_labels, self.time_embed_dim)
            emb = emb + self.class_embedding(class_emb.to(self.class_embedding[0].weight.dtype))  # expect: DTL101
        hidden = self.conv_in(sample)
        return hidden + self.emb_proj(emb)[:, :, None, None]
