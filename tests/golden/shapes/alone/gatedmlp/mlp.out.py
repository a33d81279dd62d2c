"""Sigmoid-gated MLP that inherits its projections and its gate from `gatedmlp.base` (absolute import).

Breaks in the `half` and `loaded` regimes: the inherited `gate_scores` (defined in another file)
returns float32, so `gate * self.up_proj(x)` is float32 and `down_proj` (float16 weight) raises
outside autocast. Must be flagged when this file is linted alone. Under autocast the linear casts.
"""
import torch.nn as nn

from gatedmlp.base import GatedMLPBase


class SigmoidGatedMLP(GatedMLPBase):
    def __init__(self, hidden_size, intermediate_size, dropout=0.0):
        super().__init__(hidden_size, intermediate_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, hidden_states):
        gate = self.gate_scores(hidden_states)
        hidden = gate * self.up_proj(hidden_states)
        hidden = self.dropout(hidden)
        return self.down_proj(hidden.to(self.down_proj.weight.dtype))  # expect: DTL101


class GatedMLPLayer(nn.Module):
    def __init__(self, hidden_size, intermediate_size):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size)
        self.mlp = SigmoidGatedMLP(hidden_size, intermediate_size)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.mlp(self.norm(hidden_states))
        return residual + hidden_states
