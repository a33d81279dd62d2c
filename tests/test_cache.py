"""The per-file result cache: hits, invalidation by content, config and dependencies."""

from __future__ import annotations

import json

import pytest

from conftest import FAKE_CODE, write_tree
from dtypelint import analysis, rules


@pytest.fixture
def counting(monkeypatch, hazard_rule):
    calls: list[str] = []
    real_check = rules.check

    def check(ctx):
        calls.append(ctx.filename)
        return real_check(ctx)

    monkeypatch.setattr(rules, "check", check)
    return calls


def test_second_run_is_served_from_cache(tmp_path, monkeypatch, invoke, counting):
    write_tree(tmp_path, {"a.py": "import torch\nx = HAZARD\n", "b.py": "import torch\n"})
    monkeypatch.chdir(tmp_path)
    first = invoke(["check", "--in-process", "--output-format", "json"])
    assert sorted(counting) == ["a.py", "b.py"]
    second = invoke(["check", "--in-process", "--output-format", "json"])
    assert sorted(counting) == ["a.py", "b.py"]  # no new analysis
    assert json.loads(first.stdout) == json.loads(second.stdout)
    assert (tmp_path / ".dtypelint_cache" / ".gitignore").exists()

    (tmp_path / "b.py").write_text("import torch\ny = HAZARD\n")  # content change: b re-analysed
    third = invoke(["check", "--in-process", "--output-format", "json"])
    assert sorted(counting) == ["a.py", "b.py", "b.py"]
    assert len(json.loads(third.stdout)) == 2

    invoke(["check", "--in-process", "--select", FAKE_CODE])  # config change: both re-analysed
    assert len(counting) == 5

    invoke(["check", "--in-process", "--no-cache", "--select", FAKE_CODE])
    assert len(counting) == 7


def test_dependency_change_invalidates_dependents(tmp_path, monkeypatch, invoke, hazard_rule):
    """a.py's result depends on a project-index entry from b.py; editing b.py must re-analyse a.py."""
    from dtypelint.diagnostics import Diagnostic, Position

    def summarize(text, module_name, filename, **parsed):
        return {f"{module_name}.flag": "fp32" if "FP32" in text else "low"}

    def check(ctx):
        if ctx.module_name == "a" and ctx.index.get("b.flag") == "fp32":
            return [Diagnostic(FAKE_CODE, "fake-hazard", "b is fp32", "error", ctx.filename,
                               Position(1, 1), Position(1, 2))]
        return []

    monkeypatch.setattr(analysis, "summarize", summarize)
    monkeypatch.setattr(rules, "check", check)
    write_tree(tmp_path, {"a.py": "import torch\n", "b.py": "import torch\nFP32\n"})
    monkeypatch.chdir(tmp_path)
    assert invoke(["check", "--in-process"]).exit_code == 1
    (tmp_path / "b.py").write_text("import torch\n")
    assert invoke(["check", "--in-process"]).exit_code == 0
    (tmp_path / "b.py").write_text("import torch\nFP32\n")
    assert invoke(["check", "--in-process"]).exit_code == 1


def test_corrupt_cache_entries_are_misses(tmp_path, monkeypatch, invoke, counting):
    write_tree(tmp_path, {"a.py": "import torch\nx = HAZARD\n"})
    monkeypatch.chdir(tmp_path)
    invoke(["check", "--in-process"])
    for f in (tmp_path / ".dtypelint_cache").rglob("*.json"):
        f.write_bytes(b"garbage")
    res = invoke(["check", "--in-process"])
    assert res.exit_code == 1 and len(counting) == 2


def test_cache_dir_option_and_clean(tmp_path, monkeypatch, invoke, hazard_rule):
    write_tree(tmp_path, {"a.py": "import torch\n"})
    monkeypatch.chdir(tmp_path)
    invoke(["check", "--in-process", "--cache-dir", "cc"])
    assert (tmp_path / "cc").is_dir() and not (tmp_path / ".dtypelint_cache").exists()
    res = invoke(["clean", "--cache-dir", "cc"])
    assert res.exit_code == 0 and not (tmp_path / "cc").exists()
    assert "No cache" in invoke(["clean"]).stdout


def test_clean_refuses_folders_that_are_not_caches(tmp_path, monkeypatch, invoke):
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "data.txt").write_text("keep")
    monkeypatch.chdir(tmp_path)
    invoke(["clean", "--cache-dir", "precious"])
    assert (tmp_path / "precious" / "data.txt").read_text() == "keep"
