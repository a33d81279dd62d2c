"""Float32 islands whose outputs meet float16 activations without a cast back (DTL112).

The adaLN modulation and the router are built in float32 (`dtype=torch.float32`, `.float()` in `__init__`), so
a model loaded in float16 keeps them float32 and their outputs promote the activations they scale or join.  The
conditioned block `.float()`s its timestep embedder in `__init__` and scales its activations with the output.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class AdaLayerNormZero(nn.Module):
    def __init__(self, hidden_size, cond_dim):
        super().__init__()
        self.norm = nn.LayerNorm(hidden_size, elementwise_affine=False)
        self.modulation = nn.Linear(cond_dim, 2 * hidden_size, dtype=torch.float32)
        self.proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, cond):
        shift, scale = self.modulation(F.silu(cond).to(self.modulation.weight.dtype)).chunk(2, dim=-1)
        h = self.proj(self.norm(x))
        return h * scale[:, None, :].to(h.dtype)  # expect: DTL112


class RoutedExpertMix(nn.Module):
    def __init__(self, hidden_size, num_experts):
        super().__init__()
        self.router = nn.Linear(hidden_size, num_experts).float()
        self.expert = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        router_probs = torch.sigmoid(self.router(hidden_states.to(self.router.weight.dtype)))
        out = self.expert(hidden_states)
        return torch.cat([out, router_probs.to(out.dtype)], dim=-1)  # expect: DTL112


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden_size, freq_size=64):
        super().__init__()
        self.fc1 = nn.Linear(freq_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, hidden_size)

    def forward(self, t_freq):
        return self.fc2(torch.relu(self.fc1(t_freq.to(self.fc1.weight.dtype))))


class ConditionedBlock(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.t_embedder = TimestepEmbedder(hidden_size).float()
        self.mlp = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, t_freq):
        c = self.t_embedder(t_freq)
        h = self.mlp(x)
        return h * ((1 + c[:, None, :]).to(h.dtype))  # expect: DTL112
