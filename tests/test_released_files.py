"""The released files that carried the reference bugs, each linted alone as pre-commit lints it.

The wheels are downloaded from PyPI (cached under ``~/.cache/dtypelint-tests``, or read from the folder named by
``DTYPELINT_WHEELS``); without network the tests skip.  The package is unpacked so that imported helpers and kernels
are on disk next to the file, but only the one file is passed to ``dtypelint check``, with no cache: what an editor
or a pre-commit hook sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("DTYPELINT_TEST_CACHE", Path.home() / ".cache" / "dtypelint-tests"))


def wheel(name: str, version: str) -> Path:
    """The wheel of ``name==version``: from DTYPELINT_WHEELS, the cache, or PyPI (skip when none answers)."""
    stem = f"{name.replace('-', '_')}-{version}-"
    for folder in filter(None, (os.environ.get("DTYPELINT_WHEELS"), str(CACHE / "wheels"))):
        found = sorted(Path(folder).glob(f"{stem}*.whl"))
        if found:
            return found[0]
    target = CACHE / "wheels"
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check",
         "--quiet", "--timeout", "20", "-d", str(target), f"{name}=={version}"],
        capture_output=True, text=True, timeout=300)
    found = sorted(target.glob(f"{stem}*.whl"))
    if done.returncode != 0 or not found:
        pytest.skip(f"cannot download {name}=={version} (no network?): {done.stderr.strip()[-200:]}")
    return found[0]


def unpacked(tmp_path_factory, name: str, version: str, package: str) -> Path:
    """The wheel's Python sources under a fresh folder (what a checkout of the package holds)."""
    root = tmp_path_factory.mktemp(f"{package}-{version}")
    with zipfile.ZipFile(wheel(name, version)) as zf:
        members = [m for m in zf.namelist() if m.startswith(f"{package}/") and m.endswith(".py")]
        zf.extractall(root, members)
    return root


def check_alone(path: Path) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "dtypelint", "check", "--no-cache", "--output-format", "json",
                           str(path)], capture_output=True, text=True, cwd=path.parent, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def line(path: Path, row: int) -> str:
    return path.read_text().splitlines()[row - 1]


def test_rwkv7_kernel_chosen_by_mode_gets_float32_key_under_autocast(tmp_path_factory):
    """fla 0.1.2: `k` goes through `addcmul` with an fp32 parameter under autocast and reaches the chunk kernel,
    picked at run time by `mode`, whose body (another file) asserts equal dtypes of r, k, v."""
    root = unpacked(tmp_path_factory, "flash-linear-attention", "0.1.2", "fla")
    path = root / "fla" / "layers" / "rwkv7.py"
    [d] = check_alone(path)
    assert (d["code"], d["location"]["row"], d["regimes"]) == ("DTL102", 191, ["autocast"])
    assert "rwkv7_fn(" in line(path, 191) and "`chunk_rwkv7()`" in d["message"]
    assert d["condition"] == "`mode == 'chunk'`"
    assert "`k` (float32)" in d["message"] and "asserts" in d["message"]
    steps = [s["message"] for s in d["path"]]
    assert any("nn.Parameter" in s and "float32" in s for s in steps)
    assert any("chunk.py" in s for s in steps)  # the assertion was read from the kernel's own file
    assert d["fix"] is not None


def test_t5_4_26_kept_wo_meets_half_hidden_states_when_loaded(tmp_path_factory):
    """transformers 4.26: `_keep_in_fp32_modules = ["wo"]` keeps `wo` fp32 while its input is fp16 when loaded."""
    root = unpacked(tmp_path_factory, "transformers", "4.26.0", "transformers")
    path = root / "transformers" / "models" / "t5" / "modeling_t5.py"
    found = {(d["code"], d["location"]["row"]): d for d in check_alone(path)}
    assert set(found) == {("DTL101", 292), ("DTL104", 334)}
    matmul = found["DTL101", 292]
    assert matmul["regimes"] == ["loaded"] and "self.wo(" in line(path, 292)
    assert "`self.wo.weight` (float32)" in matmul["message"]
    residual = found["DTL104", 334]
    assert residual["condition"] == "`self.DenseReluDense` is `T5DenseGatedActDense`"
    assert "self.dropout(forwarded_states)" in line(path, 334)


def test_t5_4_44_fp32_output_poisons_the_residual_when_loaded(tmp_path_factory):
    """transformers 4.44.2 casts `wo`'s input but its fp32 output is added to the fp16 residual."""
    root = unpacked(tmp_path_factory, "transformers", "4.44.2", "transformers")
    path = root / "transformers" / "models" / "t5" / "modeling_t5.py"
    [d] = check_alone(path)
    assert (d["code"], d["location"]["row"], d["regimes"]) == ("DTL104", 336, ["loaded"])
    assert d.get("condition") is None
    assert "kept in float32" in d["message"] and "residual" in d["message"]
    assert "hidden_states + self.dropout(forwarded_states)" in line(path, 336)
