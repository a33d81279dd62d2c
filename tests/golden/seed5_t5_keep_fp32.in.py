"""Encoder with `_keep_in_fp32_modules = ["wo"]` whose FFN output joins the residual (seed 5)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PretrainedBase(nn.Module):
    _keep_in_fp32_modules = ["wo"]
    base_model_prefix = "encoder"


class ScaleNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, h):
        variance = h.to(torch.float32).pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            h = h.to(self.weight.dtype)
        return self.weight * h


class GatedFeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h):
        h = F.relu(self.wi(h))
        h = self.dropout(h)
        if h.dtype != self.wo.weight.dtype and self.wo.weight.dtype != torch.int8:
            h = h.to(self.wo.weight.dtype)
        return self.wo(h)


class FeedForwardLayer(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.ff = GatedFeedForward(d_model, d_ff, dropout)
        self.norm = ScaleNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, hidden):
        forwarded = self.ff(self.norm(hidden))
        hidden = hidden + self.dropout(forwarded)  # expect: DTL104
        return hidden


class Encoder(PretrainedBase):
    def __init__(self, d_model=512, d_ff=2048, n_layers=6):
        super().__init__()
        self.layers = nn.ModuleList([FeedForwardLayer(d_model, d_ff) for _ in range(n_layers)])
        self.final_norm = ScaleNorm(d_model)

    def forward(self, hidden):
        for layer in self.layers:
            hidden = layer(hidden)
        return self.final_norm(hidden)
