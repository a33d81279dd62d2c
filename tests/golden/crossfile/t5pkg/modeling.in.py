"""Model file of the cross-file package: the keep list comes from `.base`."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .base import PreTrainedSeq2Seq


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = self.dropout(F.gelu(self.wi(x)))
        x = x.to(self.wo.weight.dtype)
        return self.wo(x)


class Block(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff)

    def forward(self, x):
        y = self.ff(self.norm(x))
        x = x + y  # expect: DTL104
        return x


class Seq2SeqEncoder(PreTrainedSeq2Seq):
    def __init__(self, d_model=128, d_ff=512, n_layers=2):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d_model, d_ff) for _ in range(n_layers)])
        self.final_norm = nn.LayerNorm(d_model)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.final_norm(x)
