"""Other files of the project: helpers, kernels and base classes, from the index or from disk."""
import ast
import pickle

from dtypelint.analysis import summarize
from dtypelint.analysis.project import ModuleEntry
from dtypelint.analysis.strictness import strict_params_of
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


def test_index_entry_is_the_module_source_keyed_by_content():
    entries = summarize(KERNEL, "pkg.kernels", "pkg/kernels.py")
    e = entries["module:pkg.kernels"]
    assert isinstance(e, ModuleEntry) and e.source == KERNEL and e.filename == "pkg/kernels.py"
    again = pickle.loads(pickle.dumps(e))  # as a worker receives it
    assert again.source == KERNEL and repr(again) == repr(e)
    changed = summarize(KERNEL.replace("x * 2", "x * 3"), "pkg.kernels", "pkg/kernels.py")
    assert repr(changed["module:pkg.kernels"]) != repr(e)  # dependants' cached results follow the source
    assert "def chunk_attn" not in repr(e)  # the source itself is not in the digest


PKG_MODEL = (
    "import torch\nfrom torch import nn\nfrom .kernels import chunk_attn, to_fp32\nfrom .base import Base\n\n"
    "class Layer(nn.Module):\n"
    "    def __init__(self, d):\n        super().__init__()\n"
    "        self.qkv = nn.Linear(d, 3 * d)\n        self.k_a = nn.Parameter(torch.ones(d))\n"
    "        self.wo = nn.Linear(d, d)\n\n"
    "    def forward(self, x):\n        q, k, v = self.qkv(x).chunk(3, dim=-1)\n"
    "        y = chunk_attn(q, k * self.k_a, v)\n"
    "        return self.wo(to_fp32(y))\n\n"
    "class Model(Base):\n"
    "    def __init__(self, d):\n        super().__init__()\n        self.layer = Layer(d)\n"
)


def make_pkg(tmp_path, model=PKG_MODEL):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(KERNEL)
    (pkg / "base.py").write_text(
        "from torch import nn\n\nclass Base(nn.Module):\n    _keep_in_fp32_modules = ['wo']\n")
    (pkg / "model.py").write_text(model)
    return pkg


def test_cross_file_strict_callee_fp32_helper_and_keep_list(tmp_path):
    pkg = make_pkg(tmp_path)
    res = lint_files([pkg / "kernels.py", pkg / "base.py", pkg / "model.py"])
    got = sorted((d.start.row, d.code, d.regimes) for d in res[pkg / "model.py"])
    # autocast: k * self.k_a is float32 at the asserting kernel; half: the helper returns float32 into
    # the linear; loaded: also float32 (`wo` is kept) -- equal dtypes, but not for the half regime
    assert got == [(15, "DTL102", ("autocast",)), (16, "DTL101", ("half",))]
    strict = next(d for d in res[pkg / "model.py"] if d.code == "DTL102")
    assert "kernels.py" in strict.path[-1].message


def test_a_file_linted_alone_finds_its_imports_on_disk(tmp_path):
    pkg = make_pkg(tmp_path)
    whole = lint_files([pkg / "kernels.py", pkg / "base.py", pkg / "model.py"])[pkg / "model.py"]
    alone = lint_files([pkg / "model.py"])[pkg / "model.py"]
    assert [(d.start.row, d.code, d.regimes, d.message) for d in alone] == \
           [(d.start.row, d.code, d.regimes, d.message) for d in whole]


def test_keep_list_applies_only_to_models_that_contain_the_module(tmp_path):
    model = PKG_MODEL.replace("        self.layer = Layer(d)\n", "        self.other = nn.Linear(d, d)\n")
    model = model.replace("self.wo(to_fp32(y))", "self.wo(y.float())")
    pkg = make_pkg(tmp_path, model)
    res = lint_files([pkg / "kernels.py", pkg / "base.py", pkg / "model.py"])
    got = sorted((d.start.row, d.code, d.regimes) for d in res[pkg / "model.py"])
    # `Layer` is not part of `Model`, so Base's keep list does not keep `Layer.wo`: fp32 input into
    # the (fp16) linear breaks when loaded too
    assert (16, "DTL101", ("half", "loaded")) in got


def strict(src):
    return strict_params_of(ast.parse(src).body[0])


def test_strict_callee_forms():
    assert strict("def f(q, k, v):\n    assert q.dtype == k.dtype == v.dtype\n") == ("q", "k", "v")
    assert strict("def f(q, k):\n    if q.dtype != k.dtype:\n        raise TypeError()\n") == ("q", "k")
    assert strict("def f(q, k, v):\n    if not (q.dtype == k.dtype == v.dtype):\n        raise ValueError()\n") == ("q", "k", "v")
    assert strict("def f(q, k, v):\n    assert all(t.dtype == q.dtype for t in (k, v))\n") == ("k", "v", "q")
    assert strict("def f(q, k, v):\n    assert len({q.dtype, k.dtype, v.dtype}) == 1\n") == ("q", "k", "v")
    assert strict("def f(q, k):\n    torch._assert(q.dtype == k.dtype, 'x')\n") == ("q", "k")
    assert strict("def f(q, k):\n    assert q.dtype == k.dtype and k.dtype == q.dtype\n") == ("q", "k")
    assert strict("def f(q, k):\n    assert q.shape == k.shape\n") == ()
    assert strict("def f(q, k):\n    if q.dtype != k.dtype:\n        k = k.to(q.dtype)\n") == ()
