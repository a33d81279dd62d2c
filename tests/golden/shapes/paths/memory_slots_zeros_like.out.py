"""Memory-augmented attention whose memory helper returns `zeros_like(template)` or a restored state.

Breaks in the `half` and `loaded` regimes, on the path where `restore_fn is None`: the slot template
is allocated in `forward` by `torch.zeros(...)` without `dtype=` (float32), `zeros_like` keeps that
dtype, and `query @ memory.transpose(-1, -2)` mixes float16 and float32 outside autocast. The other
path returns whatever the user's `restore_fn` gives (not known statically). Under autocast the
matmul casts both operands.
"""
import math

import torch
import torch.nn as nn


def initial_memory(template, restore_fn=None):
    if restore_fn is None:
        return torch.zeros_like(template)
    return restore_fn(template)


class MemorySlotAttention(nn.Module):
    def __init__(self, dim, num_slots=4, restore_fn=None):
        super().__init__()
        self.scale = 1.0 / math.sqrt(dim)
        self.num_slots = num_slots
        self.restore_fn = restore_fn
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        batch = x.shape[0]
        template = torch.zeros(1, self.num_slots, x.shape[-1], device=x.device, dtype=x.dtype)
        memory = initial_memory(template, self.restore_fn).expand(batch, -1, -1)
        query = self.to_q(x)
        scores = query @ memory.transpose(-1, -2)  # expect: DTL101
        weights = (scores * self.scale).softmax(dim=-1)
        read = torch.bmm(weights, memory)
        return x + self.to_out(read)
