"""Regression (MoE router shapes): the router's weight is kept by an entry naming its full path
(`mlp.gate.weight`), and routing runs in a project wrapper named like autocast with enabled=False.
Analysed on its own the router cannot know its path: its weight is unknown, not float16 (quiet when
loaded). In the half regime the float32 routing input really meets a float16 weight (expected)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .norms import maybe_autocast


class TopKRouter(nn.Module):
    def __init__(self, num_experts, hidden_dim):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.weight = nn.Parameter(torch.empty(num_experts, hidden_dim))

    def forward(self, hidden_states):
        flat = hidden_states.float().reshape(-1, self.hidden_dim)
        return F.linear(flat.to(self.weight.dtype), self.weight)  # expect: DTL101


class GatedRouter(nn.Module):
    def __init__(self, num_experts, hidden_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_experts, hidden_dim))

    def forward(self, hidden_states):
        with maybe_autocast(device_type="cuda", enabled=False):
            logits = F.linear(hidden_states.float(), self.weight.float())
        probs = F.softmax(logits, dim=-1, dtype=torch.float)
        routed = torch.zeros_like(probs)
        routed[probs.argmax(-1)] = probs[probs.argmax(-1)]
        return routed


class SparseMoe(nn.Module):
    def __init__(self, num_experts, hidden_dim):
        super().__init__()
        self.gate = TopKRouter(num_experts, hidden_dim)
        self.experts = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, hidden_states):
        logits = self.gate(hidden_states)
        return self.experts(hidden_states), logits


class DecoderLayer(nn.Module):
    _keep_in_fp32_modules_strict = ["mlp.gate.weight"]

    def __init__(self, num_experts=4, hidden_dim=16):
        super().__init__()
        self.mlp = SparseMoe(num_experts, hidden_dim)

    def forward(self, hidden_states):
        out, logits = self.mlp(hidden_states)
        return hidden_states + out, logits
