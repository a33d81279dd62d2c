"""Regression (ZoeDepth shape): `torch.full((), 10000.0)` is a 0-dim float32 tensor, which never
promotes the compute-dtype positions it multiplies (facts §2.1)."""
import torch
import torch.nn as nn


class PatchTransformerEncoder(nn.Module):
    def __init__(self, in_channels, patch_size=10, embedding_dim=128):
        super().__init__()
        self.embedding_conv = nn.Conv2d(in_channels, embedding_dim, patch_size, stride=patch_size)
        self.query = nn.Linear(embedding_dim, embedding_dim)

    def positional_encoding_1d(self, batch_size, sequence_length, embedding_dim, device="cpu", dtype=torch.float32):
        position = torch.arange(0, sequence_length, dtype=dtype, device=device).unsqueeze(1)
        index = torch.arange(0, embedding_dim, 2, dtype=dtype, device=device).unsqueeze(0)
        div_term = torch.exp(index * (-torch.log(torch.full((), 10000.0, device=device)) / embedding_dim))
        pos = position * div_term
        pos = torch.cat([torch.sin(pos), torch.cos(pos)], dim=1)
        return pos.unsqueeze(dim=0).repeat(batch_size, 1, 1)

    def forward(self, x):
        embeddings = self.embedding_conv(x).flatten(2).permute(0, 2, 1)
        batch_size, sequence_length, embedding_dim = embeddings.shape
        embeddings = embeddings + self.positional_encoding_1d(
            batch_size, sequence_length, embedding_dim, device=embeddings.device, dtype=embeddings.dtype
        )
        return self.query(embeddings)
