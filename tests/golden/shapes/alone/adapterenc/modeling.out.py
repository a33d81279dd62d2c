"""Adapter encoder whose pretrained base (in `pretrained.py`) keeps every `adapter` in float32.

Breaks in the `loaded` regime: a float16 load keeps `adapter` float32 (the base class's
`_keep_in_fp32_modules`); the layer casts its input to the adapter's weight dtype so the adapter runs,
and adds the float32 result to the float16 residual, which turns the residual stream float32 (the
next layer's norm then mixes dtypes). Must be flagged when this file is linted alone. `.half()`
converts the adapter too, and under autocast the adapter's output is float16.
"""
import torch.nn as nn

from adapterenc.pretrained import AdapterPreTrainedModel


class AdapterEncoderLayer(nn.Module):
    def __init__(self, d_model, bottleneck):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, d_model))
        self.adapter = nn.Linear(d_model, d_model)
        self.bottleneck = bottleneck

    def forward(self, hidden_states):
        hidden_states = hidden_states + self.ff(self.norm(hidden_states))
        adapted = self.adapter(hidden_states.to(self.adapter.weight.dtype))
        hidden_states = hidden_states + adapted.to(hidden_states.dtype)  # expect: DTL104
        return hidden_states


class AdapterEncoder(AdapterPreTrainedModel):
    def __init__(self, d_model=32, num_layers=2, bottleneck=8):
        super().__init__()
        self.layers = nn.ModuleList(AdapterEncoderLayer(d_model, bottleneck) for _ in range(num_layers))
        self.final_norm = nn.LayerNorm(d_model)

    def forward(self, hidden_states):
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return self.final_norm(hidden_states)
