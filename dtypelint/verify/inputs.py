"""Inputs for a ``forward`` (or a function) from its signature and the built module's sizes.

Tensor parameters are shaped from the module (batch 2, sequence 8, the width of its first
layer; images and latents 4-d); ids, positions and lengths are integer tensors, masks
boolean, rotary tables and caches shaped from the head size; optional arguments are left
out at first.  Several layouts are proposed, best first: the caller keeps the first one the
module accepts in float32 (a shape error is not a finding).
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from typing import Any, Callable

from dtypelint.verify import sizes

B, S = sizes.BATCH, sizes.SEQ
MAX_ATTEMPTS = 24
CACHE_LEN = 16

IDS = {"input_ids", "ids", "tokens", "token_ids", "input_tokens", "src", "tgt", "src_tokens", "tgt_tokens", "idx",
       "labels", "text_ids", "decoder_input_ids", "token_type_ids", "char_ids", "codes", "audio_codes"}
POSITIONS = {"position_ids", "positions", "pos", "pos_ids"}
TIMESTEPS = {"timestep", "timesteps", "t", "time", "sigma", "sigmas", "noise_level", "time_step", "times"}
ROTARY = {"cos", "sin", "freqs", "freqs_cos", "freqs_sin", "rotary_emb", "rotary_pos_emb", "position_embeddings",
          "pos_emb", "rope", "pe", "image_rotary_emb", "rotary", "cos_sin", "sincos", "position_embedding"}
ROTARY_PAIRS = {"position_embeddings", "rotary_emb", "rotary_pos_emb", "image_rotary_emb", "cos_sin", "sincos"}
CACHES = {"k_cache", "v_cache", "key_cache", "value_cache", "past_key", "past_value", "cache_k", "cache_v", "kv_cache"}
IMAGES = {"pixel_values", "images", "image", "img", "imgs", "latents", "latent", "sample", "noisy_latents",
          "pixel_values_videos", "video", "x_img"}
CU_SEQLENS = {"cu_seqlens", "cu_seqlens_q", "cu_seqlens_k", "cu_seq_lens", "cu_seq_lens_q", "cu_seq_lens_k"}
LENGTHS = {"lengths", "seq_lens", "seqlens", "input_lengths", "seq_lengths", "lens"}
INT_LEN = {"seq_len", "seqlen", "max_seqlen", "max_seqlen_q", "max_seqlen_k", "n", "length", "num_tokens", "max_len"}
INT_START = {"start_pos", "offset", "past_len", "past_length", "step", "start", "pos_offset", "position",
             "start_idx", "cache_offset", "layer_idx", "index"}
OPTIONAL_INPUTS = ("ids", "rotary", "image", "timestep")


@dataclass
class InputSet:
    make: Callable[[Any], tuple[tuple, dict]]  # torch -> (positional, keyword) inputs, fresh each call
    description: str


@dataclass
class Shapes:
    """Sizes read off the built module."""

    widths: list[int]
    heads: int
    head_dim: int
    vocab: int
    channels: int
    first: str  # "linear", "conv1d", "conv2d", "conv3d", "embedding" or ""

    @classmethod
    def of(cls, model, values: dict, torch) -> "Shapes":
        widths: list[int] = []
        first, channels, vocab = "", 0, 0
        if model is not None:
            for m in model.modules():
                if isinstance(m, torch.nn.Linear):
                    widths.append(m.in_features)
                    first = first or "linear"
                elif isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)):
                    first = first or {torch.nn.Conv1d: "conv1d", torch.nn.Conv2d: "conv2d",
                                      torch.nn.Conv3d: "conv3d"}[type(m)]
                    channels = channels or m.in_channels
                    widths.append(m.in_channels)
                elif isinstance(m, torch.nn.Embedding):
                    first = first or "embedding"
                    vocab = vocab or m.num_embeddings
                    widths.append(m.embedding_dim)
                elif isinstance(m, (torch.nn.LayerNorm, torch.nn.RMSNorm)) and m.normalized_shape:
                    widths.append(int(m.normalized_shape[-1]))
                elif hasattr(m, "weight") and isinstance(getattr(m, "weight", None), torch.Tensor) \
                        and m.weight.dim() == 1 and not list(m.children()):
                    widths.append(int(m.weight.shape[0]))  # hand-written norms
        by_role: dict[str, int] = {}
        for name, value in values.items():
            role = sizes.role_of(name)
            if role and isinstance(value, int) and not isinstance(value, bool):
                by_role.setdefault(role, value)
        if "width" in by_role:
            widths.insert(1 if widths else 0, by_role["width"])
        widths.append(sizes.VALUES["width"])
        widths = list(dict.fromkeys(w for w in widths if w and w > 0))[:4]
        heads = by_role.get("heads", sizes.VALUES["heads"])
        head_dim = by_role.get("head_dim") or max(1, (by_role.get("width") or widths[0]) // max(1, heads))
        return cls(widths, heads, head_dim, vocab or by_role.get("vocab", sizes.VALUES["vocab"]),
                   channels or by_role.get("channels", 3 if first == "conv2d" else sizes.VALUES["channels"]), first)


def kind_of(p: inspect.Parameter) -> str:
    n = p.name.lower()
    ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "") \
        if p.annotation is not p.empty else ""
    ann = str(p.annotation) if p.annotation is not p.empty and not ann else ann
    if n in IDS or (n.endswith("_ids") and "position" not in n):
        return "ids"
    if n in POSITIONS:
        return "positions"
    if n == "cache_position":
        return "cache_position"
    if n in CU_SEQLENS:
        return "cu_seqlens"
    if n in LENGTHS:
        return "lengths"
    if n in TIMESTEPS:
        return "timestep"
    if n in ROTARY or n.startswith(("freqs", "rotary")):
        return "rotary"
    if n in CACHES or n.endswith("_cache"):
        return "cache"
    if "mask" in n:
        return "mask"
    if n in IMAGES:
        return "image"
    if n in INT_LEN or n in INT_START or ann in ("int", "<class 'int'>"):
        return "int"
    if ann in ("bool", "<class 'bool'>"):
        return "bool"
    if ann in ("float", "<class 'float'>"):
        return "float"
    return "activation"


def _layouts(shapes: Shapes, function: bool, B: int) -> list[tuple[int, ...]]:
    w0 = shapes.widths[0]
    h, d = shapes.heads, shapes.head_dim
    seq3 = [(B, S, w) for w in shapes.widths]
    heads4 = [(B, h, S, d), (B, S, h, d)]
    image = (B, shapes.channels, sizes.VALUES["image"], sizes.VALUES["image"])
    if shapes.first == "conv2d":
        out = [image, *seq3]
    elif shapes.first == "conv1d":
        out = [(B, shapes.channels, 4 * S), *seq3]
    elif shapes.first == "conv3d":
        out = [(B, shapes.channels, 4, sizes.VALUES["image"], sizes.VALUES["image"]), image]
    elif function:
        out = [*heads4, *seq3]
    else:
        out = [*seq3, *heads4]
    out += [(B, w0, S), (B * S, w0), (B, w0), image, *heads4, *seq3, (B, S, h * d)]
    return list(dict.fromkeys(out))


def _choices(kind: str, p: inspect.Parameter, shapes: Shapes, B: int) -> list[tuple[str, Callable]]:
    """(description, make(torch, layout)) candidates for one parameter of a special kind."""
    d = shapes.head_dim
    if kind == "ids":
        return [(f"{p.name}=int64[{B},{S}]", lambda t, lay: t.randint(0, max(2, shapes.vocab), (B, S)))]
    if kind == "positions":
        return [(f"{p.name}=arange[{B},{S}]", lambda t, lay: t.arange(S).expand(B, S).clone())]
    if kind == "cache_position":
        return [(f"{p.name}=arange[{S}]", lambda t, lay: t.arange(S))]
    if kind == "cu_seqlens":
        return [(f"{p.name}=int32[{B + 1}]", lambda t, lay: t.arange(0, B + 1, dtype=t.int32) * S)]
    if kind == "lengths":
        return [(f"{p.name}=int64[{B}]", lambda t, lay: t.full((B,), S, dtype=t.long))]
    if kind == "timestep":
        return [(f"{p.name}=float[{B}]", lambda t, lay: t.rand(B) * 1000),
                (f"{p.name}=int64[{B}]", lambda t, lay: t.randint(0, 1000, (B,)))]
    if kind == "int":
        n = p.name.lower()
        value = S if (n in INT_LEN or "len" in n) else 0
        return [(f"{p.name}={value}", lambda t, lay, v=value: v)]
    if kind == "bool":
        return [(f"{p.name}=False", lambda t, lay: False)]
    if kind == "float":
        return [(f"{p.name}=1.0", lambda t, lay: 1.0)]
    if kind == "mask":
        return [(f"{p.name}=bool[{B},{S}] (nothing masked)", lambda t, lay: t.zeros(B, S, dtype=t.bool)),
                (f"{p.name}=ones[{B},{S}]", lambda t, lay: t.ones(B, S, dtype=t.long)),
                (f"{p.name}=zeros[{B},1,{S},{S}]", lambda t, lay: t.zeros(B, 1, S, S)),
                (f"{p.name}=bool[{S},{S}]", lambda t, lay: t.zeros(S, S, dtype=t.bool))]
    if kind == "cache":
        h = shapes.heads
        return [(f"{p.name}=zeros[{B},{h},{CACHE_LEN},{d}]", lambda t, lay: t.zeros(B, h, CACHE_LEN, d)),
                (f"{p.name}=zeros[{B},{CACHE_LEN},{h},{d}]", lambda t, lay: t.zeros(B, CACHE_LEN, h, d))]
    if kind == "image":
        c, r = shapes.channels, sizes.VALUES["image"]
        return [(f"{p.name}=[{B},{c},{r},{r}]", lambda t, lay: t.randn(B, c, r, r))]
    if kind == "rotary":
        pair = p.name.lower() in ROTARY_PAIRS or "tuple" in str(p.annotation).lower()
        shapes_ = [(B, S, d), (S, d), (1, S, 1, d), (B, S, 1, d), (1, 1, S, d), (B, 1, S, d)]
        out = []
        for shp in shapes_:
            label = f"{p.name}={'(cos, sin)' if pair else 'table'}{list(shp)}"
            if pair:
                out.append((label, lambda t, lay, s=shp: (t.randn(*s).cos(), t.randn(*s).sin())))
            else:
                out.append((label, lambda t, lay, s=shp: t.randn(*s)))
        return out
    return []


def _signature(fn) -> list[inspect.Parameter]:
    sig = inspect.signature(fn)
    return [p for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def input_sets(fn, model, values: dict, torch, function: bool = False, batch: int = B) -> list[InputSet]:
    """Candidate inputs for ``fn`` with ``batch`` rows, best first (at most MAX_ATTEMPTS)."""
    params = _signature(fn)
    shapes = Shapes.of(model, values, torch)
    required = [p for p in params if p.default is p.empty]
    optional = [p for p in params if p.default is None and kind_of(p) in OPTIONAL_INPUTS]
    sets: list[InputSet] = []
    for chosen in (required, required + optional):
        if sets and chosen is not required and not optional:
            break
        sets.extend(_combinations(chosen, shapes, function, batch))
        if len(sets) >= MAX_ATTEMPTS:
            break
    if not params:
        sets = [InputSet(lambda t: ((), {}), "")]
    return sets[:MAX_ATTEMPTS]


def _combinations(params: list[inspect.Parameter], shapes: Shapes, function: bool, batch: int) -> list[InputSet]:
    """Layouts x choices; parameters of one kind (``cos``/``sin``, ``k_cache``/``v_cache``) move together."""
    layouts = _layouts(shapes, function, batch)
    kinds = [kind_of(p) for p in params]
    choices = {i: _choices(k, p, shapes, batch) for i, (p, k) in enumerate(zip(params, kinds)) if k != "activation"}
    groups = sorted({kinds[i] for i in choices})
    sizes_ = {g: min(len(choices[i]) for i in choices if kinds[i] == g) for g in groups}
    uses_layout = any(k == "activation" for k in kinds)
    axes = [range(len(layouts) if uses_layout else 1)] + [range(sizes_[g]) for g in groups]
    combos = sorted(itertools.product(*axes), key=lambda idx: (sum(idx), idx))[:MAX_ATTEMPTS]
    out = []
    for combo in combos:
        layout = layouts[combo[0]]
        pick = dict(zip(groups, combo[1:]))
        picks = {i: choices[i][pick[kinds[i]]] for i in choices}
        out.append(_input_set(params, kinds, layout, picks))
    return out


def _input_set(params, kinds, layout, picks) -> InputSet:
    def make(t) -> tuple[tuple, dict]:
        args, kwargs = [], {}
        for i, (p, k) in enumerate(zip(params, kinds)):
            value = picks[i][1](t, layout) if i in picks else t.randn(*layout)
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
                args.append(value)
            else:
                kwargs[p.name] = value
        return tuple(args), kwargs

    desc = ", ".join(picks[i][0] if i in picks else f"{p.name}={list(layout)}" for i, p in enumerate(params))
    return InputSet(make, desc)


def flag_variants(fn) -> list[dict]:
    """Keyword variants that flip each boolean parameter with a default (a branch the defaults skip)."""
    out = []
    try:
        params = _signature(fn)
    except (TypeError, ValueError):
        return out
    for p in params:
        if isinstance(p.default, bool):
            out.append({p.name: not p.default})
    return out
