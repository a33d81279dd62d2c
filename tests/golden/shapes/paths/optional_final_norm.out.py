"""Language-model head whose final norm is optional and is built in float32 when present.

Breaks in the `loaded` regime, on the path where `self.final_norm is not None`: the norm's weight was
created with `dtype=torch.float32`, so it stays float32 when the model is loaded in float16, and its
output (`weight * hidden.to(input_dtype)`) is float32. `lm_head` (float16) then receives a float32
input. After `.half()` the weight is float16, and under autocast the linear casts its input.
"""
import torch
import torch.nn as nn


class ScaleRMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, dtype=dtype))

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.eps)
        return self.weight * hidden_states.to(input_dtype)


class CausalLMHead(nn.Module):
    def __init__(self, hidden_size, vocab_size, use_final_norm=True):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.act = nn.SiLU()
        self.final_norm = ScaleRMSNorm(hidden_size, dtype=torch.float32) if use_final_norm else None
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, hidden_states):
        x = self.act(self.dense(hidden_states))
        x = self.final_norm(x).to(x.dtype) if self.final_norm is not None else x
        logits = self.lm_head(x)  # expect: DTL101
        return logits
