"""A streaming conv block whose forward creates tensors without `dtype=` (DTL110).

`.half()` and `from_pretrained(torch_dtype=...)` never touch tensors created in `forward`: the zero conv
state, the ones-initialised layer scale and the float smoothing kernel below are float32 in every regime,
and each promotes the float16 activation it meets to float32.
"""
import torch
import torch.nn as nn


class StreamingConvBlock(nn.Module):
    def __init__(self, hidden_size, kernel_size=4):
        super().__init__()
        self.kernel_size = kernel_size
        self.in_proj = nn.Linear(hidden_size, hidden_size)
        self.mix = nn.Linear(hidden_size, hidden_size)

    def forward(self, x, conv_state=None):
        h = self.in_proj(x)
        if conv_state is None:
            conv_state = torch.zeros(h.shape[0], self.kernel_size - 1, h.shape[-1], device=h.device, dtype=h.dtype)
        window = torch.cat([conv_state, h], dim=1)  # expect: DTL110
        new_state = window[:, -(self.kernel_size - 1):]
        return window[:, self.kernel_size - 1:], new_state


class SmoothedGate(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.gate = nn.Linear(hidden_size, 3)
        self.value = nn.Linear(hidden_size, hidden_size)

    def forward(self, x):
        g = self.gate(x)
        taps = torch.tensor([0.25, 0.5, 0.25], device=g.device)
        weights = g * taps.to(g.dtype)  # expect: DTL110
        return self.value(x) * weights.sum(-1, keepdim=True)


class LayerScaleMLP(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.fc = nn.Linear(hidden_size, hidden_size)

    def layer_scale(self, h, init=1.0):
        gamma = torch.full((h.shape[-1],), init, device=h.device, dtype=h.dtype)
        return h * gamma  # expect: DTL110

    def forward(self, x):
        return self.layer_scale(torch.relu(self.fc(x)))
