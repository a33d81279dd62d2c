"""RWKV-style time mixing: four projections reshaped together by a generator, then a strict kernel.

Breaks in the `autocast` regime: `self.key_gain` is a float32 `[C]` parameter, and under autocast the
key projection is float16, so `k * self.key_gain` promotes k alone to float32. The generator
`(t.view(...) for t in (r, w, k, v))` keeps each element's dtype, and `wkv_recurrent` raises because
it asserts that its four inputs share one dtype. In `half` and `loaded` the gain is float16 too.
"""
import torch
import torch.nn as nn


def wkv_recurrent(r, w, k, v, state=None):
    assert r.dtype == w.dtype == k.dtype == v.dtype, f"wkv: r/w/k/v dtypes differ: {r.dtype}, {w.dtype}, {k.dtype}, {v.dtype}"
    B, T, H, D = r.shape
    if state is None:
        state = r.new_zeros(B, H, D, D)
    outputs = []
    for t in range(T):
        kv = k[:, t, :, :, None] * v[:, t, :, None, :]
        outputs.append((r[:, t, :, None, :] @ (state + kv)).squeeze(-2))
        state = state * w[:, t, :, :, None] + kv
    return torch.stack(outputs, dim=1), state


class WKVTimeMix(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.receptance = nn.Linear(n_embd, n_embd, bias=False)
        self.decay = nn.Linear(n_embd, n_embd, bias=False)
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.value = nn.Linear(n_embd, n_embd, bias=False)
        self.key_gain = nn.Parameter(torch.ones(n_embd))
        self.output = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        shifted = self.time_shift(x)
        r = self.receptance(shifted)
        w = torch.sigmoid(self.decay(shifted))
        k = self.key(x) * self.key_gain.to(r.dtype)
        v = self.value(x)
        r, w, k, v = (t.view(B, T, self.n_head, -1) for t in (r, w, k, v))
        out, _ = wkv_recurrent(r, w, k, v)  # expect: DTL102
        return self.output(out.reshape(B, T, C))
