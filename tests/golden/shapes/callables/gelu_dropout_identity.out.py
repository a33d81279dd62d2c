"""Router-gated MLP: a float32 routing confidence passes `nn.GELU`, `nn.Dropout` and an `nn.Identity` norm.

Breaks in the `half` and `loaded` regimes: the router's softmax is taken with `dtype=torch.float32`,
so the confidence that scales `fc1`'s output is float32 and promotes the hidden state; `nn.GELU`,
`nn.Dropout` and the `nn.Identity` placeholder (no norm configured) keep float32, and `fc2` (float16
weight) receives a float32 input outside autocast. Under autocast the linear casts its input.
"""
import torch
import torch.nn as nn


class RouterGatedMlp(nn.Module):
    def __init__(self, dim, hidden_dim, num_routes=4, drop=0.0, use_norm=False):
        super().__init__()
        self.router = nn.Linear(dim, num_routes, bias=False)
        self.fc1 = nn.Linear(dim, hidden_dim)
        self.act = nn.GELU(approximate="tanh")
        self.drop1 = nn.Dropout(drop)
        self.norm = nn.LayerNorm(hidden_dim) if use_norm else nn.Identity()
        self.fc2 = nn.Linear(hidden_dim, dim)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        route = torch.softmax(self.router(x), dim=-1, dtype=torch.float32)
        confidence = route.max(dim=-1, keepdim=True).values
        hidden = self.fc1(x) * confidence
        hidden = self.drop1(self.act(hidden))
        hidden = self.norm(hidden)
        out = self.fc2(hidden.to(self.fc2.weight.dtype))  # expect: DTL101
        return self.drop2(out)


class MlpBlock(nn.Module):
    def __init__(self, dim, mlp_ratio=4.0):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = RouterGatedMlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        return x + self.mlp(self.norm(x))
