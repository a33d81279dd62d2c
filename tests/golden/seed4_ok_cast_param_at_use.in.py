"""Correct twin of seed 4: the fp32 parameters are cast to k's dtype where they are used."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def chunk_rwkv(r, k, v, chunk_size=32):
    assert r.dtype == k.dtype == v.dtype
    out = torch.zeros_like(v)
    for i in range(0, r.shape[1], chunk_size):
        scores = r[:, i:i + chunk_size] @ k[:, i:i + chunk_size].transpose(-1, -2)
        out[:, i:i + chunk_size] = scores @ v[:, i:i + chunk_size]
    return out


class TimeMixFixed(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.receptance = nn.Linear(dim, dim, bias=False)
        self.key = nn.Linear(dim, dim, bias=False)
        self.value = nn.Linear(dim, dim, bias=False)
        self.k_a = nn.Parameter(torch.ones(dim))
        self.k_k = nn.Parameter(torch.ones(dim))
        self.gain = nn.Parameter(torch.tensor(1.0))
        self.a_proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        r = self.receptance(x)
        k = self.key(x)
        v = self.value(x) * self.gain
        a = torch.sigmoid(self.a_proj(x))
        kk = F.normalize(k * self.k_k.to(k.dtype), dim=-1).to(k.dtype)
        k = k.addcmul(k * (a - 1), self.k_a.to(k.dtype))
        y = chunk_rwkv(r, k, v)
        return self.out(y + kk)


class TimeMixAutocastOff(nn.Module):
    """Everything upcast together inside an autocast-disabled region, result cast back."""

    def __init__(self, dim):
        super().__init__()
        self.key = nn.Linear(dim, dim, bias=False)
        self.k_a = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        k = self.key(x)
        with torch.autocast("cuda", enabled=False):
            kf = k.float().addcmul(k.float(), self.k_a.float())
            y = chunk_rwkv(kf, kf, x.float())
        return y.to(k.dtype)
