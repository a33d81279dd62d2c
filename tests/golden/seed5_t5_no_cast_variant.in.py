"""Older-release variant of seed 5: no cast before the fp32-kept `wo` at all."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNormNoBias(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, h):
        variance = h.float().pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(self.weight.dtype)


class DenseActDense(nn.Module):
    def __init__(self, d_model, d_ff, dropout_rate=0.1):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)
        self.dropout = nn.Dropout(dropout_rate)
        self.act = nn.GELU()

    def forward(self, hidden_states):
        hidden_states = self.act(self.wi(hidden_states))
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.wo(hidden_states)  # expect: DTL101
        return hidden_states


class LayerFF(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.dense = DenseActDense(d_model, d_ff)
        self.layer_norm = LayerNormNoBias(d_model)
        self.dropout = nn.Dropout(0.1)

    def forward(self, hidden_states):
        forwarded = self.dense(self.layer_norm(hidden_states))
        return hidden_states + self.dropout(forwarded)


class EncoderModel(nn.Module):
    _keep_in_fp32_modules = ["wo"]

    def __init__(self, vocab, d_model=256, d_ff=1024, n_layers=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList([LayerFF(d_model, d_ff) for _ in range(n_layers)])

    def forward(self, input_ids):
        h = self.embed(input_ids)
        for block in self.blocks:
            h = block(h)
        return h
