"""Analysis facts behind DTL114 / DTL115 / the DTL105 mask case and keep-listed parameters, and the
false-positive classes met in the real-code triage (each a shape, never a name)."""

from __future__ import annotations

from pathlib import Path

from analysis_helpers import lint_text
from dtypelint.config import Settings


def codes(text: str) -> set[tuple[str, int]]:
    return {(d.code, d.start.row) for d in lint_text(text, Settings(root=Path(".")))}


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


KEEP = '''
import torch
from torch import nn


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("scale", torch.ones(dim))
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2) / dim)), persistent=False)
        self.freqs = nn.Buffer(torch.ones(dim), persistent=False)

    def forward(self, x):
        return self.proj(x) * self.scale

    def rotate(self, x):
        return self.proj(x)[..., ::2] * self.inv_freq

    def modulate(self, x):
        return self.proj(x) * self.freqs


class Model(nn.Module):
    _keep_in_fp32_modules = ["scale", "inv_freq", "freqs"]

    def __init__(self, dim):
        super().__init__()
        self.mixer = Mixer(dim)
'''


def test_keep_lists_keep_persistent_buffers_but_not_non_persistent_ones():
    found = codes(KEEP)
    assert ("DTL114", line_of(KEEP, "self.proj(x) * self.scale")) in found
    assert ("DTL114", line_of(KEEP, "* self.inv_freq")) not in found
    assert ("DTL114", line_of(KEEP, "* self.freqs")) not in found


def test_a_zero_dim_full_tensor_does_not_promote():
    text = '''
import torch
from torch import nn


class MatchAssignment(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.proj = nn.Linear(dim, dim)

    def forward(self, descriptors):
        m = self.proj(descriptors)
        return m / torch.full((), self.dim, device=m.device) ** 0.25
'''
    assert codes(text) == set()


def test_only_module_methods_are_boundaries_and_only_the_first_returned_value():
    text = '''
import torch
from torch import nn


def expected_score(logits, max_bin: int = 31):
    centers = torch.linspace(0, max_bin, steps=logits.shape[-1], device=logits.device)
    return (logits.softmax(-1) * centers).sum(-1)


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.bias = torch.zeros(dim)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        weights = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return weights @ v, weights + self.bias
'''
    assert codes(text) == set()


def test_a_caller_passing_float32_marks_the_return_clean():
    text = '''
import torch
from torch import nn


class Statics(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(n, dtype=torch.float32), requires_grad=False)

    def forward(self, scores):
        return scores + self.bias


class Router(nn.Module):
    def __init__(self, dim, n):
        super().__init__()
        self.gate = nn.Linear(dim, n)
        self.statics = Statics(n)

    def forward(self, hidden_states):
        probs = torch.softmax(self.gate(hidden_states).float(), dim=-1)
        return torch.topk(self.statics(probs), 2, dim=-1).indices
'''
    assert not {c for c, _ in codes(text)} & {"DTL114"}


def test_mask_index_writes_are_index_put():
    text = '''
import torch
from torch import nn


class Merger(nn.Module):
    def __init__(self, vocab, dim, image_token_id):
        super().__init__()
        self.image_token_id = image_token_id
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, input_ids, image_features, keep):
        embeds = self.embed(input_ids)
        image = self.proj(image_features)
        mask = (input_ids == self.image_token_id) & ~keep
        embeds[mask] = image
        return embeds

    def first_row(self, input_ids, image_features, step: int):
        embeds = self.embed(input_ids)
        embeds[step == 0] = self.proj(image_features)
        return embeds
'''
    found = codes(text)
    assert ("DTL105", line_of(text, "embeds[mask] = image")) in found
    assert ("DTL105", line_of(text, "embeds[step == 0]")) not in found  # a Python bool: basic indexing


def test_explicit_upcasts_and_explicit_float32_allocations_are_intent():
    text = '''
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        mask = torch.zeros(h.shape[-1], dtype=torch.float32, device=h.device)
        return h + mask

    def logits(self, x):
        return self.proj(x).float() + torch.ones(x.shape[-1])
'''
    assert codes(text) == set()
