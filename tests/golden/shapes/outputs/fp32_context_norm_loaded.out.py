"""Cross-attention whose context norm is built with `dtype=torch.float32` (fp32 in the loaded regime).

Breaks in the `loaded` regime: a float16 load keeps the context norm's weight float32 (it was built
with an explicit dtype), and the norm's output `self.weight * hidden.to(input_dtype)` is float32, so
`to_k` and `to_v` (float16 weights) receive a float32 input. `.half()` converts the weight to float16,
and under autocast the linears cast their inputs.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ContextRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=dtype))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class ConditioningCrossAttention(nn.Module):
    def __init__(self, dim, context_dim, heads=2):
        super().__init__()
        self.heads = heads
        self.context_norm = ContextRMSNorm(context_dim, dtype=torch.float32)
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(context_dim, dim, bias=False)
        self.to_v = nn.Linear(context_dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context):
        B, N, C = x.shape
        context = self.context_norm(context).to(context.dtype)
        q = self.to_q(x).view(B, N, self.heads, -1).transpose(1, 2)
        k = self.to_k(context).view(B, -1, self.heads, C // self.heads).transpose(1, 2)  # expect: DTL101
        v = self.to_v(context).view(B, -1, self.heads, C // self.heads).transpose(1, 2)  # expect: DTL101
        out = F.scaled_dot_product_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).reshape(B, N, C))
