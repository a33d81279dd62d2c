"""GPT-2 style MLP built from transformers' `Conv1D` and `ACT2FN`, with the activation run in float32.

Breaks in the `half` and `loaded` regimes: `c_fc`'s output is upcast (`.float()`) so the activation
runs in float32; `ACT2FN[config.activation_function]` and the dropout keep that dtype, and `c_proj`
(a `Conv1D`: `addmm` with a float16 weight) receives a float32 input outside autocast. Under autocast
`addmm` casts its operands.
"""
import torch.nn as nn
from transformers.activations import ACT2FN
from transformers.pytorch_utils import Conv1D


class BlockMLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.hidden_size
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = ACT2FN[config.activation_function]
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states.float())
        hidden_states = self.c_proj(hidden_states.to(self.c_proj.weight.dtype))  # expect: DTL101
        return self.dropout(hidden_states)


class BlockWithMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_2 = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_epsilon)
        self.mlp = BlockMLP(4 * config.hidden_size, config)

    def forward(self, hidden_states):
        residual = hidden_states
        feed_forward_hidden_states = self.mlp(self.ln_2(hidden_states))
        return residual + feed_forward_hidden_states
