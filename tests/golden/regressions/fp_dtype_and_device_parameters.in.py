"""Regression (diffusers embeddings / rotary shapes): parameters named `dtype`/`device`/`hidden_dtype`
are not tensors, so `.to(device)` keeps the dtype and `.to(dtype=hidden_dtype)` gives an unknown
(author-chosen) dtype rather than the activation dtype."""
import torch
import torch.nn as nn


def timestep_embedding(timesteps, dim):
    half = dim // 2
    exponent = -torch.log(torch.tensor(10000.0)) * torch.arange(half, dtype=torch.float32) / half
    emb = timesteps[:, None].float() * torch.exp(exponent)[None, :]
    return torch.cat([emb.sin(), emb.cos()], dim=-1)


class TimestepEmbedder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.linear_1 = nn.Linear(dim, dim)
        self.linear_2 = nn.Linear(dim, dim)

    def forward(self, t, hidden_dtype: torch.dtype = None):
        proj = timestep_embedding(t, self.dim).to(dtype=hidden_dtype)
        return self.linear_2(torch.nn.functional.silu(self.linear_1(proj)))


class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, position_ids, device, dtype):
        inv = self.inv_freq[None, :, None].float().to(device)
        pos = position_ids[:, None, :].float()
        with torch.autocast(device_type="cuda", enabled=False):
            freqs = (inv @ pos).transpose(1, 2)
        return freqs.cos().to(dtype), freqs.sin().to(dtype)
