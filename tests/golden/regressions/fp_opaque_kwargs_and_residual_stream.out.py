"""Regression (DEIMv2 / Higgs-audio shapes): a cached wrapper forwards `*args, **kwargs`, so the
callee's `dtype=torch.float32` default is not what the caller chose; and under autocast a decoder
layer receives the float32 residual stream, so an fp32 norm output written back into it is fine."""
import torch
import torch.nn as nn


def build_pos_embed(height, width, embed_dim=32, device=None, dtype: torch.dtype = torch.float32):
    grid = torch.arange(height * width, dtype=torch.float32, device=device)
    omega = 1.0 / (10000 ** (torch.arange(embed_dim // 2, dtype=torch.float32) / (embed_dim // 2)))
    emb = grid[:, None] * omega[None, :]
    return torch.cat([emb.sin(), emb.cos()], dim=1).to(dtype)


class PosEmbed(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim

    def _cached(self, *args, **kwargs):
        return build_pos_embed(*args, **kwargs)

    def forward(self, height, width, device, dtype):
        return self._cached(height, width, embed_dim=self.embed_dim, device=device, dtype=dtype).unsqueeze(0)


class EncoderLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.pos = PosEmbed(dim)
        self.q_proj = nn.Linear(dim, dim)
        self.norm = nn.Parameter(torch.ones(dim))

    def forward(self, hidden_states, audio_mask):
        pos = self.pos(4, 4, hidden_states.device, hidden_states.dtype)
        q = self.q_proj(hidden_states + pos)
        normed = self.norm * hidden_states[audio_mask]
        return q.masked_scatter(audio_mask.unsqueeze(-1), normed)
