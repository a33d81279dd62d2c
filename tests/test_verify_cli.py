"""``dtypelint verify`` as a user runs it: install hint without torch, start line, reports, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKERULE = Path(__file__).resolve().parent / "fakerule.py"


def env() -> dict[str, str]:
    e = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    e.pop("DTYPELINT_OUTPUT_FORMAT", None)
    return e


def dtl(args: list[str], cwd: Path, fake: bool = False, timeout: int = 600) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(FAKERULE)] if fake else [sys.executable, "-m", "dtypelint"]
    return subprocess.run([*cmd, "verify", "--no-cache", *args], cwd=cwd, capture_output=True, text=True, env=env(),
                          timeout=timeout)


def test_without_torch_it_says_how_to_install_it_and_exits_2(tmp_path):
    (tmp_path / "m.py").write_text("import torch\n")
    code = textwrap.dedent("""
        import sys
        sys.modules['torch'] = None  # `import torch` raises ImportError, as when it is not installed
        from dtypelint.cli import main
        sys.argv = ['dtypelint', 'verify', 'm.py']
        main()
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env(), timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'dtypelint[verify]'" in lines[0] and "torch==2.13.0" in lines[0]
    assert r.stdout == ""


def test_the_cli_and_check_never_import_torch(tmp_path):
    (tmp_path / "m.py").write_text("import torch\nx = torch.ones(2)\n")
    code = textwrap.dedent("""
        import sys
        from dtypelint.cli import main
        sys.argv = ['dtypelint', 'check', '--no-cache', 'm.py']
        try:
            main()
        except SystemExit:
            pass
        assert 'torch' not in sys.modules, 'check imported torch'
        print('ok')
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env(), timeout=120)
    assert r.stdout.strip().endswith("ok"), r.stderr


torch = pytest.importorskip("torch")

HAZARD = '''
import torch
from torch import nn


class Mixer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w = nn.Parameter(torch.randn(dim, dim))

    def forward(self, x):
        a = x.float()
        return torch.mm(a, self.w.to(x.dtype))
'''


def test_a_finding_whose_fix_does_not_fix_exits_1_with_the_table_and_a_line_each(tmp_path):
    """The stand-in rule DTL999 flags ``torch.mm`` and 'fixes' it to ``torch.matmul``, which fails the same way."""
    (tmp_path / "mixer.py").write_text(HAZARD)
    r = dtl(["--regime", "half", "mixer.py"], tmp_path, fake=True)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.splitlines()[0].startswith("dtypelint verify: this executes your project's code")
    out = r.stdout
    for column in ("Location", "Code", "Regime", "Device", "Status", "Fixed", "Output", "Max abs err"):
        assert column in out
    line = next(line for line in out.splitlines() if line.startswith("mixer.py:13:"))
    assert "DTL999 [half, cpu] reproduced: RuntimeError: expected m1 and m2 to have the same dtype" in line
    assert "fixed: no (still fails" in line and "harness: Mixer(dim=64).forward(x=[" in line  # a 2-d input fits mm
    assert out.rstrip().endswith("1 finding verified (a finding per regime): 1 reproduced (0 fixed), "
                                 "0 not reproduced, 0 not run.")


def test_json_report_to_a_file(tmp_path):
    (tmp_path / "mixer.py").write_text(HAZARD)
    r = dtl(["--regime", "half", "--output-format", "json", "-o", "out/report.json", "-q", "mixer.py"], tmp_path, fake=True)
    assert r.returncode == 1 and r.stdout == "" and r.stderr == ""
    [item] = json.loads((tmp_path / "out" / "report.json").read_text())
    assert {"code", "filename", "location", "regime", "device", "status", "reproduced", "fixed", "detail",
            "output_dtype", "max_abs_err"} <= set(item)
    assert item["location"] == {"row": 13, "column": 16}
    assert (item["code"], item["regime"], item["device"], item["status"]) == ("DTL999", "half", "cpu", "reproduced")
    assert item["reproduced"] is True and item["fixed"] is False and item["max_abs_err"] is None


def test_a_reference_hazard_is_reproduced_and_fixed_exit_0(tmp_path):
    from dtypelint.catalog import load_catalog

    if "DTL101" not in load_catalog():
        pytest.skip("the analysis is not in this checkout")
    shutil.copy(ROOT / "fixtures" / "seed1_dit_vanilla_attention.py", tmp_path / "dit.py")
    r = dtl(["--output-format", "json", "dit.py"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads(r.stdout)
    assert {(x["regime"], x["status"], x["fixed"]) for x in results} == {("half", "reproduced", True),
                                                                         ("loaded", "reproduced", True)}
    assert all(x["output_dtype"] == "torch.float16" and x["max_abs_err"] < 0.05 for x in results)
    assert not list(tmp_path.rglob("__pycache__"))  # the user's tree is left as it was


def test_nothing_to_verify_exits_0(tmp_path):
    (tmp_path / "clean.py").write_text("import torch\n\n\ndef f(x):\n    return x + 1\n")
    r = dtl(["clean.py"], tmp_path)
    assert r.returncode == 0 and "No findings to verify." in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--device", "cuda", "x.py"], "no CUDA device is available"),
    (["--select", "NOPE", "x.py"], "--select: unknown rule selector 'NOPE'"),
    (["--regime", "fast", "x.py"], "Invalid value for '--regime'"),
])
def test_usage_errors_exit_2(tmp_path, args, message):
    if args[0] == "--device" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    (tmp_path / "x.py").write_text("import torch\n")
    r = dtl(args, tmp_path)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_a_bad_verify_configuration_exits_2_naming_the_key(tmp_path):
    (tmp_path / "x.py").write_text("import torch\n")
    (tmp_path / "pyproject.toml").write_text("[tool.dtypelint.verify]\ntimeout = 'soon'\n")
    r = dtl(["x.py"], tmp_path)
    assert r.returncode == 2 and "key 'verify.timeout' must be a number" in r.stderr, r.stderr
