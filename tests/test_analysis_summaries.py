"""Summaries in the project index: cross-file helpers, forwards, strict callees, keep lists."""
import pickle
from pathlib import Path

from dtypelint.analysis import summarize
from dtypelint.analysis.module_facts import ClassFacts
from dtypelint.analysis.summaries import FuncSummary
from analysis_helpers import lint_files

KERNEL = '''
import torch


def chunk_attn(q, k, v):
    assert q.dtype == k.dtype == v.dtype, "mixed"
    return q


def to_fp32(x):
    return x.float()


def identity(x):
    return x * 2
'''


def test_function_summaries():
    entries = summarize(KERNEL, "pkg.kernels", "pkg/kernels.py")
    s = entries["pkg.kernels.chunk_attn"]
    assert isinstance(s, FuncSummary) and s.strict == ("q", "k", "v")
    results = {(r, a): k for r, a, k, _ in entries["pkg.kernels.to_fp32"].get_results()}
    assert results[("half", "low")] == "fp32"
    results = {(r, a): k for r, a, k, _ in entries["pkg.kernels.identity"].get_results()}
    assert results[("half", "low")] == "low" and results[("half", "fp32")] == "fp32"


def test_lazy_summaries_equal_eager_ones_and_survive_pickling():
    lazy = summarize(KERNEL, "pkg.kernels", "pkg/kernels.py")
    eager = summarize(KERNEL, "pkg.kernels", "pkg/kernels.py", lazy=False)
    assert set(lazy) == set(eager)
    for key, e in eager.items():
        if isinstance(e, FuncSummary):
            assert lazy[key].results is None  # nothing interpreted in phase 1
            again = pickle.loads(pickle.dumps(lazy[key]))  # as a worker receives it
            assert again.get_results() == lazy[key].get_results() == e.results
            assert again.strict == e.strict and again.params == e.params
    # the digest dependants are keyed on follows the source, not the (uncomputed) results
    changed = summarize(KERNEL.replace("x * 2", "x * 3"), "pkg.kernels", "pkg/kernels.py")
    assert repr(changed["pkg.kernels.identity"]) != repr(lazy["pkg.kernels.identity"])
    assert "def chunk_attn" not in repr(lazy["pkg.kernels.identity"])  # the source is not in the repr


def test_entries_are_picklable_with_deterministic_repr():
    e1 = summarize(KERNEL, "pkg.kernels", "pkg/kernels.py")
    e2 = summarize(KERNEL, "pkg.kernels", "pkg/kernels.py")
    assert repr(e1) == repr(e2)
    pickle.loads(pickle.dumps(e1))


def test_class_entries():
    src = "import torch\nfrom torch import nn\n\nclass Base(nn.Module):\n    _keep_in_fp32_modules = ['wo']\n"
    entries = summarize(src, "pkg.base", "pkg/base.py")
    assert isinstance(entries["pkg.base.Base"], ClassFacts)
    assert entries["pkg.base.Base"].keep == ("wo",)


def test_cross_file_strict_callee_and_keep_list(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(KERNEL)
    (pkg / "base.py").write_text(
        "from torch import nn\n\nclass Base(nn.Module):\n    _keep_in_fp32_modules = ['wo']\n")
    (pkg / "model.py").write_text(
        "import torch\nfrom torch import nn\nfrom .kernels import chunk_attn\nfrom .base import Base\n\n"
        "class Layer(nn.Module):\n"
        "    def __init__(self, d):\n        super().__init__()\n"
        "        self.qkv = nn.Linear(d, 3 * d)\n        self.k_a = nn.Parameter(torch.ones(d))\n"
        "        self.wo = nn.Linear(d, d)\n\n"
        "    def forward(self, x):\n        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
        "        y = chunk_attn(q, k * self.k_a, v)\n"
        "        return self.wo(y)\n\n"
        "class Model(Base):\n    pass\n")
    res = lint_files([pkg / "kernels.py", pkg / "base.py", pkg / "model.py"])
    got = sorted((d.start.row, d.code, d.regimes) for d in res[pkg / "model.py"])
    assert got == [(15, "DTL102", ("autocast",)), (16, "DTL101", ("loaded",))]
    strict = next(d for d in res[pkg / "model.py"] if d.code == "DTL102")
    assert "kernels.py" in strict.path[-1].message


def test_strict_callee_forms():
    from dtypelint.analysis.interpreter import strict_params_of
    import ast as _ast

    def params(src):
        return strict_params_of(_ast.parse(src).body[0])

    assert params("def f(q, k, v):\n    assert q.dtype == k.dtype == v.dtype\n") == ("q", "k", "v")
    assert params("def f(q, k):\n    if q.dtype != k.dtype:\n        raise TypeError()\n") == ("q", "k")
    assert params("def f(q, k, v):\n    if not (q.dtype == k.dtype == v.dtype):\n        raise ValueError()\n") == ("q", "k", "v")
    assert params("def f(q, k):\n    assert q.shape == k.shape\n") == ()
    assert params("def f(q, k):\n    if q.dtype != k.dtype:\n        k = k.to(q.dtype)\n") == ()
