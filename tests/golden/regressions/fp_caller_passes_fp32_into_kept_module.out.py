"""Regression (Kandinsky shape): a module kept in float32 receives a float32 time embedding from its
caller.  Judged on its own (parameters = compute-dtype activations) it would look broken; judged in
its caller's context it is fine.  The `+` with an independent embedding is not a residual add."""
import torch
import torch.nn as nn


def get_freqs(dim, max_period=10000.0):
    freqs = torch.exp(-torch.log(torch.tensor(max_period)) * torch.arange(0, dim, dtype=torch.float32) / dim)
    return freqs


class TimeEmbeddings(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.freqs = get_freqs(dim // 2)
        self.in_layer = nn.Linear(dim, dim)
        self.out_layer = nn.Linear(dim, dim)

    def forward(self, time):
        args = torch.outer(time.to(torch.float32), self.freqs.to(device=time.device))
        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
        # really breaks in the half regime only: `.half()` converts the kept layers too
        return self.out_layer(torch.nn.functional.silu(self.in_layer(emb.to(self.in_layer.weight.dtype))))  # expect: DTL101


class Modulation(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.out_layer = nn.Linear(dim, 2 * dim)

    def forward(self, t):
        return self.out_layer(torch.nn.functional.silu(t))


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.modulation = Modulation(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, time_embed):
        shift, scale = self.modulation(time_embed).chunk(2, dim=-1)
        x = (x.float() * (1 + scale.float()) + shift.float()).type_as(x)
        return x + self.proj(x)


class Model(nn.Module):
    _keep_in_fp32_modules = ["time_embeddings", "modulation"]

    def __init__(self, dim, depth=2):
        super().__init__()
        self.time_embeddings = TimeEmbeddings(dim)
        self.pooled = nn.Linear(dim, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])

    def forward(self, x, timestep, pooled_text):
        time_embed = self.time_embeddings(timestep)
        time_embed = time_embed + self.pooled(pooled_text)
        for block in self.blocks:
            x = block(x, time_embed)
        return x
