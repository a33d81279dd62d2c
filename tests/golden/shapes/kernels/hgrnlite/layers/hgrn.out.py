"""HGRN token mixer whose kernels live in `..ops` (re-exported through `ops/__init__.py`).

Breaks in the `autocast` regime: the forget gate's lower bound is a float32 `[D]` parameter, so under
autocast `lower_bound + (1 - lower_bound) * sigmoid(...)` is float32 and `g = torch.log(f)` too (log
is a float32 op under autocast), while the input branch `i` stays float16. Both kernels (imported
relatively, `from ..ops import ...`) reject inputs of different dtypes. In `half` and `loaded` the
lower bound is float16 and every input has one dtype.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..ops import chunk_hgrn, fused_hgrn


class HGRNMixer(nn.Module):
    def __init__(self, hidden_size, mode="fused_recurrent", use_output_gate=True):
        super().__init__()
        self.mode = mode
        self.i_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.f_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.g_proj = nn.Linear(hidden_size, hidden_size, bias=False) if use_output_gate else None
        self.lower_bound = nn.Parameter(torch.full((hidden_size,), 0.1))
        self.o_proj = nn.Linear(hidden_size, hidden_size, bias=False)

    def forward(self, hidden_states):
        i = F.silu(self.i_proj(hidden_states))
        f = self.lower_bound + (1 - self.lower_bound) * torch.sigmoid(self.f_proj(hidden_states))
        g = torch.log(f)
        if self.mode == "chunk":
            o, _ = chunk_hgrn(i, g.to(i.dtype))  # expect: DTL102
        else:
            o, _ = fused_hgrn(i, g.to(i.dtype))  # expect: DTL102
        if self.g_proj is not None:
            o = o * torch.sigmoid(self.g_proj(hidden_states))
        return self.o_proj(o)
