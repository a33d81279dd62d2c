"""Correct twin of seed 5: the fp32-kept module's output is cast back before the residual add."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class KeptFFN(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, h):
        input_dtype = h.dtype
        h = F.relu(self.wi(h))
        if h.dtype != self.wo.weight.dtype:
            h = h.to(self.wo.weight.dtype)
        return self.wo(h).to(input_dtype)


class FFLayer(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.ffn = KeptFFN(d_model, d_ff)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, hidden):
        return hidden + self.ffn(self.norm(hidden))


class OutputHead(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.wo = nn.Linear(d_model, d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, hidden):
        update = self.wo(hidden.to(self.wo.weight.dtype))
        hidden = hidden + update.to(hidden.dtype)
        return self.lm_head(hidden)


class TinyEncoder(nn.Module):
    _keep_in_fp32_modules = ["wo"]

    def __init__(self, d_model=64, d_ff=256, vocab=100):
        super().__init__()
        self.layers = nn.ModuleList([FFLayer(d_model, d_ff) for _ in range(2)])
        self.head = OutputHead(d_model, vocab)

    def forward(self, hidden):
        for layer in self.layers:
            hidden = layer(hidden)
        return self.head(hidden)
