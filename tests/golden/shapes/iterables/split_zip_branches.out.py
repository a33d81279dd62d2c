"""Three-branch token mixer: `torch.split` makes content / gate / context, each with its own projection via `zip`.

Breaks in the `half` and `loaded` regimes: the gate branch is computed in float32
(`torch.sigmoid(gate.float())`), so one element of the tuple is float32, and the comprehension
`[proj(t) for proj, t in zip(self.branch_proj, ...)]` feeds it to a float16 `nn.Linear` outside
autocast. The other two branches keep the activations' dtype. Under autocast the linear casts.
"""
import torch
import torch.nn as nn


class TriBranchMixer(nn.Module):
    def __init__(self, dim, content_dim=32, gate_dim=16, context_dim=16, dropout=0.0):
        super().__init__()
        self.split_sizes = (content_dim, gate_dim, context_dim)
        self.in_proj = nn.Linear(dim, sum(self.split_sizes))
        self.branch_proj = nn.ModuleList(nn.Linear(size, dim) for size in self.split_sizes)
        self.branch_weights = nn.Parameter(torch.zeros(len(self.split_sizes)))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        content, gate, context = torch.split(self.in_proj(x), self.split_sizes, dim=-1)
        gate = torch.sigmoid(gate.float())
        context = context.mean(dim=1, keepdim=True).expand_as(context)
        outs = [proj(t.to(proj.weight.dtype)) for proj, t in zip(self.branch_proj, (content, gate, context))]  # expect: DTL101
        weights = self.branch_weights.softmax(dim=0).to(x.dtype)
        mixed = sum(w * o for w, o in zip(weights, outs))
        return x + self.dropout(mixed)


class TriBranchBlock(nn.Module):
    def __init__(self, dim, mlp_ratio=2):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.mixer = TriBranchMixer(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * mlp_ratio), nn.GELU(), nn.Linear(dim * mlp_ratio, dim))

    def forward(self, x):
        x = self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))
