"""Streaming decoder whose window memory is allocated in `forward` without `dtype=` (seed 3b variant).

`torch.zeros(...)` allocates float32 (the default dtype) even in a `.half()` or fp16-loaded model;
`torch.cat` then promotes the new keys and values to float32 while the query stays in the compute
dtype, and SDPA rejects the mix.  The compute dtype is in scope at the allocation, so the fix gives
the allocation `dtype=`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class StreamingSelfAttention(nn.Module):
    def __init__(self, dim, num_heads, window=256):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.window = window
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden_states, past_len: int = 0):
        B, T, C = hidden_states.shape
        qkv = self.qkv(hidden_states).view(B, T, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        # memory of the previous window: zeros on the first chunk
        k_mem = torch.zeros(B, self.num_heads, past_len, self.head_dim, device=hidden_states.device)
        v_mem = torch.zeros(B, self.num_heads, past_len, self.head_dim, device=hidden_states.device)
        k = torch.cat((k_mem, k), dim=2)
        v = torch.cat((v_mem, v), dim=2)
        out = F.scaled_dot_product_attention(q, k, v)  # expect: DTL102
        return self.proj(out.transpose(1, 2).reshape(B, T, C))


class StreamingBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = StreamingSelfAttention(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_ratio * dim), nn.GELU(), nn.Linear(mlp_ratio * dim, dim))

    def forward(self, x, past_len: int = 0):
        x = x + self.attn(self.norm1(x), past_len)
        return x + self.mlp(self.norm2(x))


class StreamingDecoder(nn.Module):
    def __init__(self, dim, depth, num_heads):
        super().__init__()
        self.blocks = nn.ModuleList([StreamingBlock(dim, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, past_len: int = 0):
        for i, block in enumerate(self.blocks):
            x = block(x, past_len)
        return self.norm(x)
