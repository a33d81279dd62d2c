"""Mixer block whose gated FFN body runs under `torch.utils.checkpoint.checkpoint` on a float32 input.

Breaks in the `half` and `loaded` regimes: the hidden state is upcast (`h.float()`) before the gating,
`checkpoint(self._gated, h, use_reentrant=False)` returns what `_gated` returns (elementwise ops keep
float32), and `fc_out` (float16 weight) then receives a float32 input outside autocast. The
non-checkpointed branch is the same computation. Under autocast the linear casts its input.
"""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class CheckpointedGLUBlock(nn.Module):
    def __init__(self, dim, expansion=4, gradient_checkpointing=True):
        super().__init__()
        hidden = dim * expansion
        self.norm = nn.LayerNorm(dim)
        self.fc_in = nn.Linear(dim, 2 * hidden)
        self.fc_out = nn.Linear(hidden, dim)
        self.gradient_checkpointing = gradient_checkpointing

    @staticmethod
    def _gated(h):
        content, gate = h.chunk(2, dim=-1)
        return content * torch.sigmoid(gate)

    def forward(self, x):
        h = self.fc_in(self.norm(x))
        h = h.float()
        if self.gradient_checkpointing:
            h = checkpoint(self._gated, h, use_reentrant=False)
        else:
            h = self._gated(h)
        return x + self.fc_out(h.to(self.fc_out.weight.dtype))  # expect: DTL101
