"""Efficient (softmax-feature) linear attention reaching a strict kernel through a chain of wrappers.

Breaks in the `autocast` regime: the feature maps are softmaxes (`q.softmax(dim=-1)`,
`k.softmax(dim=1)`), which CUDA autocast runs in float32, while v stays float16. The call chain
`self._attend` -> `linear_attention` -> `_linear_attention_fwd` ends in a function that raises when
`q.dtype != k.dtype or k.dtype != v.dtype`; the finding is at the call in `forward`, where the mixed
values enter the chain. Outside autocast the softmaxes keep float16.
"""
import torch.nn as nn


def _linear_attention_fwd(q, k, v, scale):
    if q.dtype != k.dtype or k.dtype != v.dtype:
        raise RuntimeError(f"linear attention kernel: q, k, v must have one dtype, got {q.dtype}/{k.dtype}/{v.dtype}")
    context = k.transpose(-2, -1) @ v
    return (q @ context) * scale


def linear_attention(q, k, v, scale=1.0, head_first=True):
    if not head_first:
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    out = _linear_attention_fwd(q, k, v, scale)
    return out if head_first else out.transpose(1, 2)


class EfficientAttention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = 1.0
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def _attend(self, q, k, v):
        return linear_attention(q, k, v, scale=self.scale, head_first=False)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.to_qkv(x).view(B, N, 3, self.heads, self.head_dim).unbind(dim=2)
        q = q.softmax(dim=-1)
        k = k.softmax(dim=1)
        out = self._attend(q.to(v.dtype), k.to(v.dtype), v)  # expect: DTL102
        return self.to_out(out.reshape(B, N, C))
