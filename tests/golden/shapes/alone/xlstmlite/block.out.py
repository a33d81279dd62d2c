"""mLSTM block importing its kernel from the package root (`from xlstmlite import mlstm_parallel`).

Breaks in the `autocast` regime: the forget-gate bias is a float32 `[H]` parameter, so under autocast
`self.fgate(x) + self.fgate_bias` is float32 while q, k, v and the input gate are float16; the kernel
(defined in `cells.py`, re-exported by `__init__.py`) raises unless all five inputs share one dtype.
Must be flagged when this file is linted alone. In `half` and `loaded` the bias is float16.
"""
import torch
import torch.nn as nn

from xlstmlite import mlstm_parallel


class MLSTMBlock(nn.Module):
    def __init__(self, dim, num_heads=2, proj_factor=2):
        super().__init__()
        inner = dim * proj_factor
        self.num_heads = num_heads
        self.head_dim = inner // num_heads
        self.norm = nn.LayerNorm(dim)
        self.up_proj = nn.Linear(dim, inner)
        self.qkv = nn.Linear(inner, 3 * inner, bias=False)
        self.igate = nn.Linear(inner, num_heads)
        self.fgate = nn.Linear(inner, num_heads)
        self.fgate_bias = nn.Parameter(torch.linspace(3.0, 6.0, num_heads))
        self.down_proj = nn.Linear(inner, dim)

    def forward(self, x):
        B, T, _ = x.shape
        h = self.up_proj(self.norm(x))
        q, k, v = self.qkv(h).view(B, T, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        i = self.igate(h).transpose(1, 2)
        f = (self.fgate(h) + self.fgate_bias.to(h.dtype)).transpose(1, 2)
        out = mlstm_parallel(q, k, v, i, f)  # expect: DTL102
        out = out.transpose(1, 2).reshape(B, T, -1)
        return x + self.down_proj(out)
