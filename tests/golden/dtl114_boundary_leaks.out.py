"""DTL114: module outputs that turn float32 for float16 inputs because a float32 operand is mixed in.

Each class/function is a different shape of the same hazard: a plain tensor attribute (not converted by
`.half()`), a `_keep_in_fp32_modules` parameter (kept float32 when loaded in float16), a tensor clamp
bound, and register tokens concatenated in front of the tokens.
"""
import math

import torch
import torch.nn as nn


class PretrainedBase(nn.Module):
    """Stands for a pretrained-model base class: the loader keeps `D` in float32."""

    _keep_in_fp32_modules = ["D"]


class TokenGate(nn.Module):
    """A fixed per-channel gate stored as a plain tensor attribute: `.half()` leaves it float32."""

    def __init__(self, dim=64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.gate = torch.linspace(0.5, 1.0, dim)

    def forward(self, hidden_states, gated=True):
        h = self.proj(hidden_states)
        if not gated:
            return h
        return h * self.gate.to(h.dtype)  # expect: DTL114


class SkipMixer(nn.Module):
    """A state-space style mixer whose skip weight `D` the model keeps in float32 when loaded."""

    def __init__(self, dim=64):
        super().__init__()
        self.in_proj = nn.Linear(dim, dim)
        self.D = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        u = self.in_proj(x)
        y = torch.tanh(u)
        return y + u * self.D.to(u.dtype)  # expect: DTL114


class MixerModel(PretrainedBase):
    def __init__(self, hidden_size=64):
        super().__init__()
        self.mixer = SkipMixer(hidden_size)
        self.norm = nn.LayerNorm(hidden_size)

    def forward(self, hidden_states):
        return self.norm(hidden_states) + self.mixer(hidden_states)


class SoftCap(nn.Module):
    """Clamps the logits to per-class floors kept in a plain tensor attribute (float32 after `.half()`)."""

    def __init__(self, dim=64, n_classes=10):
        super().__init__()
        self.head = nn.Linear(dim, n_classes)
        self.floor = torch.full((n_classes,), -30.0)

    def forward(self, features):
        logits = self.head(features) / math.sqrt(features.shape[-1])
        return logits.clamp(min=self.floor.to(logits.dtype))  # expect: DTL114


class RegisterTokens(nn.Module):
    """Prepends learned-looking register tokens that were never registered as a parameter or buffer."""

    def __init__(self, dim=64, num_registers=4):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.registers = torch.zeros(1, num_registers, dim)

    def forward(self, patch_embeds):
        x = self.embed(patch_embeds)
        return torch.cat([self.registers.expand(x.shape[0], -1, -1).to(x.dtype), x], dim=1)  # expect: DTL114
