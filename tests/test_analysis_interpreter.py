"""The interpreter: per-regime dtypes through control flow, autocast regions, calls."""
import ast
from dataclasses import replace
from pathlib import Path

import pytest

from dtypelint.analysis.interp import FileAnalysis, Frame
from dtypelint.config import Settings
from analysis_helpers import lint_text

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def returned(src, regime="half", compute="float16"):
    """Kind returned by the last function of ``src`` in ``regime`` (params = activations)."""
    text = HEADER + src
    tree = ast.parse(text)
    settings = replace(Settings(root=Path(".")), compute_dtype=compute)
    fa = FileAnalysis(tree, text, "t.py", "t", settings)
    if fa.classes:
        cnode, facts = list(fa.classes.values())[-1]
        fn = next(s for s in cnode.body if isinstance(s, ast.FunctionDef) and s.name == "forward")
        return Frame(fa, fn, facts, regime, report=False).run_default()
    fn = list(fa.functions.values())[-1]
    return Frame(fa, fn, None, regime, report=False).run_default()


def codes(src, **kw):
    return sorted((d.start.row - 4, d.code, d.regimes) for d in lint_text(HEADER + src, **kw))


def test_params_are_activations_and_casts():
    assert returned("def f(x):\n    return x\n").kind == "low"
    assert returned("def f(x):\n    return x.float()\n").kind == "fp32"
    assert returned("def f(x, y):\n    return x.float().to(y.dtype)\n").kind == "low"
    assert returned("def f(x, y):\n    return x.float().type_as(y)\n").kind == "low"
    assert returned("def f(x):\n    return x.to(torch.float32)\n").kind == "fp32"
    assert returned("def f(x):\n    return x.to(dtype=torch.float64)\n").kind == "fp64"
    assert returned("def f(x, mask):\n    return mask\n").kind == "unknown"


def test_bfloat16_compute_dtype():
    assert returned("def f(x):\n    return x.bfloat16()\n", compute="bfloat16").kind == "low"
    assert returned("def f(x):\n    return x.half()\n", compute="bfloat16").kind == "olp"
    assert returned("def f(x):\n    return x + x.half()\n", compute="bfloat16").kind == "fp32"


def test_autocast_fp32_ops_and_composites():
    for expr in ("F.normalize(x, dim=-1)", "x.softmax(-1)", "torch.exp(x)", "x.square()", "1 / x", "x ** 2",
                 "F.layer_norm(x, x.shape[-1:])", "F.interpolate(x, scale_factor=2)", "x.norm(dim=-1)"):
        src = f"def f(x):\n    x = x.half()\n    return {expr}\n"
        assert returned(src, "autocast").kind == "fp32", expr
        assert returned(src, "half").kind == "low", expr


def test_explicit_dtype_wins_under_autocast():
    assert returned("def f(x):\n    return x.float().softmax(-1, dtype=torch.float16)\n", "autocast").kind == "low"
    assert returned("def f(x):\n    return F.softmax(x, -1, dtype=torch.float32)\n", "half").kind == "fp32"


def test_activations_under_autocast_are_unknown_but_linear_outputs_are_low():
    assert returned("def f(x):\n    return x\n", "autocast").kind == "unknown"
    src = ("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.proj = nn.Linear(4, 4)\n\n    def forward(self, x):\n        return self.proj(x)\n")
    assert returned(src, "autocast").kind == "low"
    assert returned(src, "half").kind == "low"


def test_dtype_guard_narrows_the_else_branch():
    src = ("def f(x, w):\n    h = mystery(x)\n    if h.dtype != w.dtype:\n        h = h.to(w.dtype)\n    return h\n")
    assert returned(src).kind == "low"
    src2 = ("def f(x, w):\n    h = mystery(x)\n    w = w.float()\n"
            "    if isinstance(w, torch.Tensor) and h.dtype != w.dtype:\n        h = h.to(w.dtype)\n    return h\n")
    assert returned(src2).kind == "fp32"


def test_autocast_lower_precision_and_promote():
    assert returned("def f(x):\n    return x.float() @ x\n", "autocast").kind == "low"
    assert returned("def f(x):\n    x = x.half()\n    return torch.addcmul(x, x, x.float())\n", "autocast").kind == "fp32"


def test_autocast_disabled_region():
    src = ("def f(q, k):\n    with torch.autocast('cuda', enabled=False):\n"
           "        s = q.float() @ k.float()\n    return s\n")
    assert returned(src, "autocast").kind == "fp32"
    src2 = "def f(q, k):\n    s = q.float() @ k.float()\n    return s\n"
    assert returned(src2, "autocast").kind == "low"


def test_autocast_region_with_dtype_turns_autocast_on():
    src = ("def f(q, k):\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
           "        s = q.float() @ k.float()\n    return s\n")
    assert returned(src, "half").kind == "low"


def test_if_else_join_and_pruning():
    src = "def f(x, flag):\n    if flag:\n        x = x.float()\n    return x\n"
    assert returned(src).kind == "fp32"  # may be fp32
    src2 = "def f(x):\n    if x.dtype == torch.float32:\n        x = x.double()\n    return x\n"
    assert returned(src2).kind == "low"  # decided in the regime: branch never taken
    src3 = "def f(x):\n    if x.dtype != torch.float32:\n        return x.float()\n    return x\n"
    assert returned(src3).kind == "fp32"


def test_early_return_and_raise():
    src = "def f(x, flag):\n    if flag:\n        raise ValueError()\n    return x\n"
    assert returned(src).kind == "low"


def test_loops_reach_a_fixpoint():
    src = ("def f(x, n):\n    acc = x\n    for i in range(n):\n        acc = acc + torch.ones(4)\n    return acc\n")
    assert returned(src).kind == "fp32"
    src2 = "def f(x, n):\n    while n:\n        x = x * 2\n    return x\n"
    assert returned(src2).kind == "low"


def test_tuple_unpacking_and_chunks():
    src = "def f(x):\n    a, b = x.float(), x\n    return b\n"
    assert returned(src).kind == "low"
    src2 = "def f(x):\n    q, k, v = x.chunk(3, dim=-1)\n    return v\n"
    assert returned(src2).kind == "low"
    src3 = "def f(x):\n    vals, idx = x.topk(3, dim=-1)\n    return idx\n"
    assert returned(src3).kind == "int"
    assert returned("def f(x):\n    return x.float().max(dim=-1).values\n").kind == "fp32"
    assert returned("def f(x):\n    return torch.sort(x, dim=-1).indices\n").kind == "int"


def test_factories_and_like():
    assert returned("def f(x):\n    return torch.zeros(3, 4)\n").kind == "fp32"
    assert returned("def f(x):\n    return torch.zeros(3, dtype=x.dtype)\n").kind == "low"
    assert returned("def f(x):\n    return torch.zeros_like(x)\n").kind == "low"
    assert returned("def f(x):\n    return x.new_zeros(3)\n").kind == "low"
    assert returned("def f(x):\n    return torch.arange(4)\n").kind == "int"
    assert returned("def f(x):\n    return torch.arange(4) / 4\n").kind == "fp32"
    assert returned("def f(x):\n    return x * torch.tensor(2.0)\n").kind == "low"  # 0-dim
    assert returned("def f(x):\n    return x * torch.tensor([2.0])\n").kind == "fp32"  # [1]-shaped


def test_helper_functions_are_interpreted_with_actual_arguments():
    src = ("def restore(t, ref):\n    return t.to(ref.dtype)\n\n"
           "def f(x):\n    y = x.float()\n    return restore(x, y)\n")
    assert returned(src).kind == "fp32"  # restores to an already-promoted dtype


def test_unknown_never_reports():
    assert codes("def f(q, v):\n    a = mystery(q)\n    return a @ v\n") == []


def test_sink_regimes():
    src = "def f(q, k, v):\n    return F.scaled_dot_product_attention(q, k.float(), v)\n"
    assert codes(src) == [(2, "DTL102", ("half", "loaded"))]
    src2 = "import flash_attn\ndef f(q, k, v):\n    return flash_attn.flash_attn_func(q.float(), k, v)\n"
    assert codes(src2) == [(3, "DTL103", ("autocast", "half", "loaded"))]


def test_one_bug_one_finding():
    src = "def f(a, v, w):\n    x = a.float() @ v\n    return x @ w\n"
    assert codes(src) == [(2, "DTL101", ("half", "loaded"))]


def test_inplace_ops_keep_the_destination_dtype():
    src = "def f(x, v):\n    x += v.float()\n    return x @ v\n"
    assert codes(src) == []


ROTARY_CHAIN = [
    "inv_freq",
    "torch.arange(n).float()[:, None] * inv_freq[None, :]",
    "torch.outer(torch.arange(n).float(), inv_freq)",
    "torch.cat((inv_freq[None, :] * n, torch.outer(torch.arange(n).float(), inv_freq)), dim=-1).cos()",
]


@pytest.mark.parametrize("sig", ["def f(n, dim, base=10000):", "def f(n, dim, base):",
                                 "def f(self, n):\n    base, dim = self.base, self.dim"])
@pytest.mark.parametrize("expr", ROTARY_CHAIN)
@pytest.mark.parametrize("regime", ["autocast", "half", "loaded"])
def test_rotary_inverse_frequencies_stay_float32(sig, expr, regime):
    """Python scalar `**` / `/` an fp32 tensor is fp32 even when the scalar's value is unseen."""
    src = (f"{sig}\n    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))\n"
           f"    return {expr}\n")
    assert returned(src, regime).kind == "fp32"


def test_unknown_activation_times_fp32_stays_unknown_under_autocast():
    # the residual stream under autocast may be float32: no claim (regression fp_opaque_kwargs...)
    src = ("class M(nn.Module):\n    def __init__(self, d):\n        super().__init__()\n"
           "        self.w = nn.Parameter(torch.ones(d))\n\n"
           "    def forward(self, x, mask):\n        return self.w * x[mask]\n")
    assert returned(src, "autocast").kind == "unknown"
    src2 = src.replace("x[mask]", "x")
    assert returned(src2, "autocast").kind == "unknown"


@pytest.mark.parametrize("tail,attr,kinds", [
    ("self.cos = emb.cos()", "self.cos", ("fp32", "fp32", "fp32")),  # plain attribute: never converted
    ("self.register_buffer('cos_cached', emb.cos(), persistent=False)", "self.cos_cached", ("fp32", "low", "fp32")),
])
def test_rotary_tables_plain_attribute_vs_buffer(tail, attr, kinds):
    src = ("class R(nn.Module):\n    def __init__(self, config, n=2048):\n        super().__init__()\n"
           "        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, config.head_dim, 2).float() / config.head_dim))\n"
           "        freqs = torch.outer(torch.arange(n).float(), inv_freq)\n"
           "        emb = torch.cat((freqs, freqs), dim=-1)\n"
           f"        {tail}\n\n    def forward(self, x):\n        return {attr}\n")
    assert tuple(returned(src, r).kind for r in ("autocast", "half", "loaded")) == kinds


MOE = '''
class Expert(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, d)
        self.scale = nn.Parameter(torch.ones(d, dtype=torch.float32))

    def forward(self, x):
        return self.w(x) * self.scale


class MoE(nn.Module):
    def __init__(self, d, n):
        super().__init__()
        BUILD

    def forward(self, x):
        LOOP
'''


@pytest.mark.parametrize("build", [
    "self.experts = nn.ModuleList([Expert(d) for _ in range(n)])",
    "self.experts = nn.ModuleList()\n        for _ in range(n):\n            self.experts.append(Expert(d))",
])
@pytest.mark.parametrize("loop", [
    "for i, expert in enumerate(self.experts):\n            x = expert(x)\n        return x",
    "for expert in self.experts:\n            x = expert(x)\n        return x",
    "for expert, w in zip(self.experts, range(3)):\n            x = expert(x)\n        return x",
    "return self.experts[0](x)",
])
def test_expert_loops_know_the_element_class(build, loop):
    src = MOE.replace("BUILD", build).replace("LOOP", loop)
    assert returned(src, "loaded").kind == "fp32"  # the experts' fp32 scale promotes x
    assert returned(src, "half").kind == "low"


def test_called_helper_is_not_cleared_by_its_own_entry_assumption():
    """deberta `disentangled_att_bias`: judged at its entry with assumed (compute-dtype) arguments the
    matmul is fine; its callers pass an fp32-biased query; the outermost caller passes unknowns.  The
    entry assumption must not clear the callers' finding (it is what callers' contexts replace)."""
    src = '''
def helper(q, k):
    return torch.matmul(q, k.transpose(-1, -2))


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_bias = nn.Parameter(torch.zeros(d, dtype=torch.float32))

    def forward(self, q, k):
        return helper(q + self.q_bias, k)


class Encoder(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.layers = nn.ModuleList([Attn(d) for _ in range(2)])

    def forward(self, x):
        h = mystery(x)
        for i, layer in enumerate(self.layers):
            h = layer(h, h)
        return h
'''
    found = codes(src)
    assert (3, "DTL101", ("loaded",)) in found
