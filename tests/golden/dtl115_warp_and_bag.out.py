"""DTL115: `F.grid_sample` and `embedding_bag` given inputs of two dtypes, which raises.

A flow-warping layer samples float16 features with a grid built from default-dtype (float32) coordinates
(fails in the `half` and `loaded` regimes; CUDA autocast runs grid_sample in the widest dtype); a bag pooling
layer weights its float32 table (under `autocast`) with float16 scores, and a functional variant weights a
float16 table with float32 softmax scores (`half`, `loaded`).  embedding_bag is on no autocast list.
"""
import torch
import torch.nn.functional as F
from torch import nn


class FlowWarp(nn.Module):
    def __init__(self, channels=8):
        super().__init__()
        self.conv = nn.Conv2d(channels, 2, 3, padding=1)

    def forward(self, feat):
        b, _, h, w = feat.shape
        flow = self.conv(feat).permute(0, 2, 3, 1)
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
        base = torch.stack((xs, ys), dim=-1)
        grid = base + flow
        return F.grid_sample(feat.to(grid.dtype), grid, align_corners=False).to(feat.dtype)  # expect: DTL115


class BagPool(nn.Module):
    def __init__(self, num_embeddings=100, dim=32):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, dim, mode="sum")
        self.score = nn.Linear(dim, 1)

    def bags(self, hidden):
        """One bag of table rows per sequence, one row per token."""
        b, t, _ = hidden.shape
        ids = torch.arange(b * t, device=hidden.device) % self.bag.num_embeddings
        offsets = torch.arange(0, b * t, t, device=hidden.device)
        return ids, offsets

    def forward(self, hidden):
        ids, offsets = self.bags(hidden)
        w = self.score(hidden).reshape(-1)
        return self.bag(ids, offsets, per_sample_weights=w.to(self.bag.weight.dtype))  # expect: DTL115


class SoftBagPool(BagPool):
    """Normalises the token scores in float32 first."""

    def forward(self, hidden):
        ids, offsets = self.bags(hidden)
        w = torch.softmax(self.score(hidden).reshape(hidden.shape[0], -1), dim=-1, dtype=torch.float32).reshape(-1)
        return F.embedding_bag(ids, self.bag.weight, offsets, mode="sum", per_sample_weights=w.to(self.bag.weight.dtype))  # expect: DTL115
