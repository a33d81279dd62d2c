"""Audio-token encoder that embeds discrete codec tokens when it has a codebook, else takes features.

Breaks in the `loaded` regime, on the path where `self.embed is not None`: the codebook embedding was
built with `dtype=torch.float32` (kept wide "for codebook precision"), so after a float16 load it
returns float32 rows, and `in_proj` (float16) gets a float32 input. With `.half()` the embedding is
float16 too, and under autocast the linear casts its input.
"""
import torch
import torch.nn as nn


class CodecTokenEncoder(nn.Module):
    def __init__(self, feature_dim, hidden_size, codebook_size=None, num_layers=2):
        super().__init__()
        self.embed = None
        if codebook_size:
            self.embed = nn.Embedding(codebook_size, feature_dim, dtype=torch.float32)
        self.in_proj = nn.Linear(feature_dim, hidden_size)
        self.layers = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(hidden_size), nn.Linear(hidden_size, hidden_size), nn.GELU())
            for _ in range(num_layers)
        )
        self.out_norm = nn.LayerNorm(hidden_size)

    def forward(self, x):
        if self.embed is not None:
            x = self.embed(x)
        hidden = self.in_proj(x.to(self.in_proj.weight.dtype))  # expect: DTL101
        for layer in self.layers:
            hidden = hidden + layer(hidden)
        return self.out_norm(hidden)
