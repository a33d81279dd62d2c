"""Light import/alias resolution without libcst metadata."""
import ast

from dtypelint.analysis.names import Names, canonical_torch, resolve_relative


def q(src, expr, module="pkg.mod"):
    names = Names(ast.parse(src), module)
    return names.qualify(ast.parse(expr, mode="eval").body)


def test_module_aliases():
    assert q("import torch.nn.functional as F", "F.normalize") == "torch.nn.functional.normalize"
    assert q("from torch.nn import functional as F", "F.softmax") == "torch.nn.functional.softmax"
    assert q("import torch", "torch.nn.functional.linear") == "torch.nn.functional.linear"
    assert q("from torch import nn", "nn.Linear") == "torch.nn.Linear"


def test_function_aliases_and_packages():
    assert q("from flash_attn import flash_attn_func as fa", "fa") == "flash_attn.flash_attn_func"
    assert q("import flash_attn", "flash_attn.flash_attn_func") == "flash_attn.flash_attn_func"
    assert q("import xformers.ops as xops", "xops.memory_efficient_attention") == "xformers.ops.memory_efficient_attention"


def test_optional_imports_in_try_blocks():
    src = "try:\n    from flash_attn import flash_attn_func\nexcept ImportError:\n    flash_attn_func = None\n"
    assert q(src, "flash_attn_func") == "flash_attn.flash_attn_func"


def test_local_definitions_shadow_imports():
    src = "from lib import helper\n\ndef helper(x):\n    return x\n"
    assert q(src, "helper") == "pkg.mod.helper"


def test_relative_imports():
    assert resolve_relative("pkg.sub.mod", 1, "base") == "pkg.sub.base"
    assert resolve_relative("pkg.sub.mod", 2, "util") == "pkg.util"
    assert q("from .base import Base", "Base", "pkg.sub.mod") == "pkg.sub.base.Base"


def test_unresolved_names():
    assert q("import torch", "x.float") is None


def test_canonical_torch():
    assert canonical_torch("torch.nn.modules.linear.Linear") == "torch.nn.Linear"
    assert canonical_torch("torch.cuda.amp.autocast") == "torch.amp.autocast"
