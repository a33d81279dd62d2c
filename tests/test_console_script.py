"""The installed `dtypelint` console script behaves like the module (a new user's first contact)."""

from __future__ import annotations

import json

from conftest import run_script, write_tree
from dtypelint import __version__


def test_version_and_help(script):
    proc = run_script(script, ["--version"])
    assert proc.returncode == 0 and proc.stdout.decode().strip() == f"dtypelint {__version__}"
    for cmd in ([], ["check"], ["rules"], ["rule"], ["clean"]):
        proc = run_script(script, [*cmd, "--help"])
        assert proc.returncode == 0, cmd
        assert "Usage: dtypelint" in proc.stdout.decode()
    check_help = run_script(script, ["check", "--help"]).stdout.decode()
    for option in ("--output-format", "--output-file", "--select", "--ignore", "--extend-select", "--config",
                   "--isolated", "--jobs", "--no-cache", "--cache-dir", "--stdin-filename", "--exit-zero"):
        assert option in check_help


def test_rules_and_rule(script):
    proc = run_script(script, ["rules"])
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert "DTL001" in out and "syntax-error" in out
    proc = run_script(script, ["rules", "--output-format", "json"])
    assert {r["code"] for r in json.loads(proc.stdout)} >= {"DTL001", "DTL005"}
    proc = run_script(script, ["rule", "DTL001"])
    assert proc.returncode == 0
    out = proc.stdout.decode()
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in out
    proc = run_script(script, ["rule", "DTL999"])
    assert proc.returncode == 2 and "unknown rule 'DTL999'" in proc.stderr.decode()


def test_exit_codes_through_the_script(script, tmp_path):
    write_tree(tmp_path, {"ok.py": "import torch\nx = 1\n", "bad.py": "import torch\ndef f(:\n"})
    assert run_script(script, ["check", "ok.py"], cwd=tmp_path).returncode == 0
    proc = run_script(script, ["check", "--output-format", "json", "bad.py"], cwd=tmp_path)
    assert proc.returncode == 1 and json.loads(proc.stdout)[0]["code"] == "DTL001"
    assert run_script(script, ["check", "--exit-zero", "bad.py"], cwd=tmp_path).returncode == 0
    assert run_script(script, ["check", "--output-format", "nope"], cwd=tmp_path).returncode == 2
    proc = run_script(script, ["check", "-", "--stdin-filename", "x.py", "--output-format", "concise"], cwd=tmp_path,
                      input=b"import torch\ndef f(:\n")
    assert proc.returncode == 1 and proc.stdout.decode().startswith("x.py:2:")


def test_parallel_and_serial_runs_agree(script, tmp_path):
    files = {f"m{i}.py": "import torch\n" + ("def f(:\n" if i % 3 == 0 else "x = 1\n") for i in range(30)}
    write_tree(tmp_path, files)
    serial = run_script(script, ["check", "--no-cache", "-j", "1", "--output-format", "json"], cwd=tmp_path)
    parallel = run_script(script, ["check", "--no-cache", "-j", "2", "--output-format", "json"], cwd=tmp_path)
    assert json.loads(serial.stdout) == json.loads(parallel.stdout)
    assert len(json.loads(serial.stdout)) == 10
