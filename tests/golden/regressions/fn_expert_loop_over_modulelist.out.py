"""Regression (false negative): experts reached through `enumerate(self.experts)` and through a
`ModuleList` filled with `.append(...)` in `__init__`.

Each expert keeps a learnable output scale created in float32 explicitly, which fp16 loading keeps:
the expert's output is float32.  The sparse block adds it into a compute-dtype buffer with
`index_add_` (equal dtypes required, even under autocast); the dense block feeds it straight into its
fp16 output projection.  Both loops used to make `expert(x)` unknown.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ScaledExpert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.out_scale = nn.Parameter(torch.ones(dim, dtype=torch.float32))

    def forward(self, x):
        return self.down(F.silu(self.up(x))) * self.out_scale.to(x.dtype)  # expect: DTL114


class SparseExperts(nn.Module):
    def __init__(self, dim, hidden, n_experts):
        super().__init__()
        self.router = nn.Linear(dim, n_experts, bias=False)
        self.experts = nn.ModuleList([ScaledExpert(dim, hidden) for _ in range(n_experts)])

    def forward(self, hidden_states):
        flat = hidden_states.reshape(-1, hidden_states.shape[-1])
        choice = self.router(flat).argmax(dim=-1)
        out = torch.zeros_like(flat)
        for i, expert in enumerate(self.experts):
            token_idx = (choice == i).nonzero().squeeze(-1)
            expert_out = expert(flat[token_idx])
            out.index_add_(0, token_idx, expert_out.to(out.dtype))  # expect: DTL105
        return out.view_as(hidden_states)


class DenseExperts(nn.Module):
    def __init__(self, dim, hidden, n_experts):
        super().__init__()
        self.experts = nn.ModuleList()
        for _ in range(n_experts):
            self.experts.append(ScaledExpert(dim, hidden))
        self.out_proj = nn.Linear(dim, dim)

    def forward(self, hidden_states):
        mixed = torch.zeros_like(hidden_states)
        for expert in self.experts:
            mixed = mixed + expert(hidden_states)
        return self.out_proj(mixed / len(self.experts))  # expect: DTL101
