"""Hand-written normalisations whose eps guard is below float16's smallest value (DTL108).

In float16 `1e-12`, `1e-10` and `1e-8` round to 0, so the guard disappears: an all-zero
feature row (padding, a dead channel) divides 0 by 0, `rsqrt(0)` is inf and `log(0)` -inf.
"""
import torch
import torch.nn as nn


def l2_normalize(x, dim=-1):
    return x / (x.norm(dim=dim, keepdim=True) + max(1e-12, torch.finfo(x.dtype).tiny))  # expect: DTL108


class CosineClassifier(nn.Module):
    """Prototype classifier: cosine similarity between projected features and class weights."""

    def __init__(self, in_features, num_classes, scale=16.0):
        super().__init__()
        self.proj = nn.Linear(in_features, in_features)
        self.prototypes = nn.Parameter(torch.randn(num_classes, in_features))
        self.scale = scale

    def forward(self, features):
        feats = l2_normalize(self.proj(features))
        protos = self.prototypes
        norms = protos.norm(dim=-1, keepdim=True).clamp(min=max(1e-8, torch.finfo(features.dtype).tiny))
        return self.scale * feats @ (protos / norms).t()  # expect: DTL108


class ScaleNorm(nn.Module):
    """RMS-style norm whose mean square is taken in float32 but handed back to float16 too early."""

    def __init__(self, dim):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        mean_sq = x.float().pow(2).mean(-1, keepdim=True).to(x.dtype)
        return self.gain * x * torch.rsqrt(mean_sq + max(1e-12, torch.finfo(mean_sq.dtype).tiny))  # expect: DTL108


class PolicyHead(nn.Module):
    """Action logits plus an entropy bonus computed from the probabilities."""

    def __init__(self, dim, n_actions, exact=True):
        super().__init__()
        self.logits = nn.Linear(dim, n_actions)
        self.exact = exact

    def forward(self, state):
        logits = self.logits(state)
        probs = logits.softmax(-1)
        if self.exact:
            entropy = -(probs * torch.log(probs + max(1e-10, torch.finfo(probs.dtype).tiny))).sum(-1)  # expect: DTL108
        else:
            entropy = -(probs * probs.clamp_min(1e-6).log()).sum(-1)
        return logits, entropy
