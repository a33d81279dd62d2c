"""Softmax computed in float32 whose probabilities weight float16 activations without a cast back (DTL113).

The mixture-of-experts layer keeps its routing weights float32 (`dtype=torch.float32`) and combines the expert
outputs with them; the attention pooler normalises upcast scores and pools with them; the pointer head mixes
float32 log-probabilities into its float16 copy scores.  Each result leaves in float32.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SparseMoeBlock(nn.Module):
    def __init__(self, hidden_size, num_experts, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(hidden_size, num_experts, bias=False)
        self.experts = nn.ModuleList([nn.Linear(hidden_size, hidden_size) for _ in range(num_experts)])

    def forward(self, hidden_states):
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=-1, dtype=torch.float32)
        routing_weights, selected = torch.topk(routing_weights, self.top_k, dim=-1)
        out = torch.zeros_like(hidden_states)
        for i, expert in enumerate(self.experts):
            expert_out = expert(hidden_states)
            weight = (routing_weights * (selected == i)).sum(dim=-1, keepdim=True)
            out = out + expert_out * weight.to(expert_out.dtype)  # expect: DTL113
        return out


class AttentionPooler(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.proj = nn.Linear(hidden_size, hidden_size)
        self.score = nn.Linear(hidden_size, 1)

    def attention_pool(self, hidden_states, scores):
        probs = scores.float().softmax(dim=1)
        return (hidden_states * probs.unsqueeze(-1).to(hidden_states.dtype)).sum(dim=1)  # expect: DTL113

    def forward(self, x):
        h = self.proj(x)
        return self.attention_pool(h, self.score(h).squeeze(-1))


class PointerHead(nn.Module):
    def __init__(self, hidden_size, vocab_size):
        super().__init__()
        self.generate = nn.Linear(hidden_size, vocab_size)
        self.copy = nn.Linear(hidden_size, vocab_size)

    def forward(self, h):
        gen_logprobs = F.log_softmax(self.generate(h), dim=-1, dtype=torch.float32)
        copy_scores = self.copy(h)
        return torch.where(copy_scores > 0, copy_scores, gen_logprobs.to(copy_scores.dtype))  # expect: DTL113
