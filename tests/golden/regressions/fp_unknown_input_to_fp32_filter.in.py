"""Regression (Qwen2.5-Omni vocoder shape): an activation module injected through the constructor is
opaque, so the tensor reaching a depthwise conv with a float32 filter buffer has an unknown dtype;
the conv's result must stay unknown rather than take the filter's float32 (no finding at `conv_post`).
The depthwise conv itself is judged with the entry-point assumption (fp16 activations) and does break
when loaded: the filter is built in float32 explicitly and loading keeps it (expected finding)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def sinc_filter(kernel_size):
    t = torch.arange(kernel_size, dtype=torch.float32) - kernel_size // 2
    return torch.sinc(t / 2).view(1, 1, kernel_size)


class DownSample(nn.Module):
    def __init__(self, kernel_size=12):
        super().__init__()
        self.register_buffer("filter", sinc_filter(kernel_size), persistent=False)

    def forward(self, hidden_states):
        channels = hidden_states.shape[1]
        hidden_states = F.pad(hidden_states, (6, 5), mode="replicate")
        return F.conv1d(hidden_states, self.filter.expand(channels, -1, -1), stride=2, groups=channels)  # expect: DTL101


class AntiAliasedActivation(nn.Module):
    def __init__(self, activation):
        super().__init__()
        self.act = activation
        self.downsample = DownSample()

    def forward(self, hidden_states):
        return self.downsample(self.act(hidden_states))


class Vocoder(nn.Module):
    def __init__(self, channels, activation):
        super().__init__()
        self.activation_post = AntiAliasedActivation(activation)
        self.conv_post = nn.Conv1d(channels, 1, 7, padding=3)

    def forward(self, hidden):
        return torch.tanh(self.conv_post(self.activation_post(hidden)))
