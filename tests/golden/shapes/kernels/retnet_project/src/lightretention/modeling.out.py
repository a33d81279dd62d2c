"""Retention layer of a src-layout package, importing its kernel through the package's `__init__`.

Breaks in every regime (`autocast`, `half`, `loaded`): `xpos_tables` (in `kernels.py`, re-exported by
`lightretention/__init__.py` and imported absolutely) builds its sin/cos tables from
`torch.arange(...).float()`, so rotating q and k with them gives float32 while v keeps the compute
dtype. `parallel_retention` raises when `q.dtype != k.dtype` or `k.dtype != v.dtype`; it has no
autocast registration, so autocast does not help.
"""
import torch
import torch.nn as nn

from lightretention import parallel_retention, xpos_tables


def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class RetentionLayer(nn.Module):
    def __init__(self, embed_dim, num_heads, gamma=0.9):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.gamma = gamma
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False)

    def decay_mask(self, seq_len, device):
        pos = torch.arange(seq_len, device=device)
        distance = (pos[:, None] - pos[None, :]).clamp(min=0)
        return (self.gamma ** distance) * (pos[:, None] >= pos[None, :])

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (proj(x).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
                   for proj in (self.q_proj, self.k_proj, self.v_proj))
        sin, cos = xpos_tables(T, self.head_dim, x.device)
        q = q * cos + rotate_every_two(q) * sin
        k = k * cos + rotate_every_two(k) * sin
        out = parallel_retention(q.to(v.dtype), k.to(v.dtype), v, self.decay_mask(T, x.device))  # expect: DTL102
        return self.out_proj(out.transpose(1, 2).reshape(B, T, C))
