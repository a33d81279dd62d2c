"""Keep-list entries that name parameters and buffers, not submodules (`loaded` regime).

`_keep_in_fp32_modules = ["A_log", "D"]` keeps those parameters float32 when the model is loaded in
float16; `_keep_in_fp32_modules_strict = ["e_score_correction_bias"]` keeps that buffer float32 for float16
and bfloat16.  Where they meet float16 activations without a cast: a matmul that raises (DTL101), a module
output that turns float32 (DTL114), and router weights returned in float32 (DTL114).
"""
import torch
import torch.nn as nn


class PretrainedHybrid(nn.Module):
    """Stands for the pretrained-model base class whose lists the loader reads."""

    _keep_in_fp32_modules = ["A_log", "D"]
    _keep_in_fp32_modules_strict = ["e_score_correction_bias"]


class SelectiveScanMixer(nn.Module):
    def __init__(self, dim=32, state=8):
        super().__init__()
        self.in_proj = nn.Linear(dim, dim)
        self.x_proj = nn.Linear(dim, state)
        self.A_log = nn.Parameter(torch.zeros(state, state))
        self.D = nn.Parameter(torch.ones(dim))
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        x = self.in_proj(hidden_states)
        b = self.x_proj(x)
        A = -torch.exp(self.A_log)
        states = b @ A.to(b.dtype)  # expect: DTL101
        y = self.out_proj(x) * torch.sigmoid(states.sum(-1, keepdim=True))
        return y + x * self.D.to(x.dtype)  # expect: DTL114


class BiasedTopKRouter(nn.Module):
    def __init__(self, dim=32, n_experts=8, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(dim, n_experts, bias=False)
        self.register_buffer("e_score_correction_bias", torch.zeros(n_experts))

    def forward(self, hidden_states):
        scores = self.gate(hidden_states).sigmoid()
        biased = scores + self.e_score_correction_bias.to(scores.dtype)
        topk_idx = biased.topk(self.top_k, dim=-1).indices
        return biased.gather(-1, topk_idx), topk_idx  # expect: DTL114


class HybridBlock(PretrainedHybrid):
    def __init__(self, dim=32):
        super().__init__()
        self.mixer = SelectiveScanMixer(dim)
        self.router = BiasedTopKRouter(dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, hidden_states):
        normed = self.norm(hidden_states)
        weights, idx = self.router(normed)
        return hidden_states + self.mixer(normed), weights, idx
