"""Module facts read from __init__ and class attributes."""
import ast

from dtypelint.analysis.module_facts import class_facts
from dtypelint.analysis.names import Names

SRC = '''
import torch
from torch import nn


class RMSNorm(nn.Module):
    pass


class Block(nn.Module):
    _keep_in_fp32_modules = ["wo"]
    _keep_in_fp32_modules_strict = ["router.bias"]

    def __init__(self, dim):
        super().__init__()
        self.k_a = nn.Parameter(torch.zeros(dim))
        self.gain = nn.Parameter(torch.tensor(1.0))
        self.scale = nn.Parameter(torch.ones(1))
        self.cos = nn.Parameter(torch.randn(4, dim, dtype=torch.float32))
        inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.register_buffer("steps", torch.zeros(1, dtype=torch.long))
        self.norm = RMSNorm(dim, dtype=torch.float32)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, dim).float()
        self.layers = nn.ModuleList([RMSNorm(dim) for _ in range(2)])
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU())
        self.cache = torch.zeros(2, dim)
        self.eps = 1e-6
        self.temp = dim ** -0.5
        self.out = nn.Linear(dim, dim)
        self.out.float()
'''


def facts():
    tree = ast.parse(SRC)
    return class_facts(tree.body[3], Names(tree, "m"), "m.py")


def test_keep_lists_and_bases():
    f = facts()
    assert f.keep == ("wo",) and f.keep_strict == ("router.bias",)
    assert f.bases == ("torch.nn.Module",)


def test_parameters_with_dtype_and_shape():
    f = facts()
    assert (f.attr("k_a").kind, f.attr("k_a").dtype, f.attr("k_a").shape) == ("param", "default", "[dim]")
    assert f.attr("gain").shape == "0dim"
    assert f.attr("scale").shape == "[1]"
    assert f.attr("cos").dtype == "fp32" and f.attr("cos").fp32


def test_buffers():
    f = facts()
    assert f.attr("inv_freq").kind == "buffer" and f.attr("inv_freq").dtype == "fp32"
    assert f.attr("steps").dtype == "int"


def test_submodules():
    f = facts()
    assert f.attr("norm").cls == "m.RMSNorm" and f.attr("norm").fp32
    assert f.attr("proj").cls == "torch.nn.Linear" and not f.attr("proj").fp32
    assert f.attr("head").fp32
    assert f.attr("out").fp32  # `.float()` applied later in __init__
    assert f.attr("layers").elem == "m.RMSNorm"
    assert f.attr("mlp").chain == ("torch.nn.Linear", "torch.nn.GELU")


def test_plain_tensors_and_scalars():
    f = facts()
    assert f.attr("cache").kind == "tensor" and f.attr("cache").dtype == "default"
    assert f.attr("eps").kind == "scalar" and f.attr("temp").kind == "scalar"


def test_positions_are_recorded():
    f = facts()
    a = f.attr("k_a")
    assert a.row == 16 and a.col == 9 and a.filename == "m.py"


def test_conditional_submodules_keep_both_classes():
    src = ("import torch\nfrom torch import nn\n\nclass A(nn.Module):\n    def __init__(self, d, qk_norm):\n"
           "        super().__init__()\n        self.q_norm = nn.LayerNorm(d) if qk_norm else nn.Identity()\n")
    tree = ast.parse(src)
    f = class_facts(tree.body[2], Names(tree, "m"), "m.py")
    assert f.attr("q_norm").cls == "torch.nn.LayerNorm" and f.attr("q_norm").alts == ("torch.nn.Identity",)
