"""--write-baseline / --baseline: content-keyed, line-shift proof, clear errors, atomic writes."""

from __future__ import annotations

import json
import os

import pytest

from conftest import MODEL, run_cli

TWO = MODEL + '''

def helper(a, b):
    c = b.float()
    return torch.mm(c, a)
'''


@pytest.fixture
def repo(project, fake_rule):
    (project / "m.py").write_text(TWO)
    return project


def test_write_then_check_is_clean(repo):
    r = run_cli("--write-baseline", "dtl-baseline.json", ".")
    assert r.exit_code == 0, r.output
    data = json.loads((repo / "dtl-baseline.json").read_text())
    assert [f["scope"] for f in data["findings"]] == ["Attention.forward", "helper"]
    assert all("row" not in f and "line" not in f for f in data["findings"])  # not keyed on lines
    r = run_cli("--baseline", "dtl-baseline.json", ".")
    assert r.exit_code == 0 and "2 baselined findings hidden" in r.output


def test_shifted_lines_do_not_resurrect(repo):
    run_cli("--write-baseline", "b.json", "m.py")
    text = TWO.replace("import torch\n", "import torch\nimport math\n\n\nX = 1  # moved everything down\n")
    text = text.replace("return torch.mm(a, w)", "return  torch.mm(a,w)   # reformatted, same code")
    (repo / "m.py").write_text(text)
    r = run_cli("--baseline", "b.json", "--output-format", "json", "m.py")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == []


def test_new_and_changed_findings_are_reported(repo):
    run_cli("--write-baseline", "b.json", "m.py")
    text = TWO.replace("return torch.mm(c, a)", "return torch.mm(c, a) + torch.mm(a, a)")  # changed statement
    text += "\n\ndef fresh(q, k):\n    return torch.mm(q.float(), k)\n"
    (repo / "m.py").write_text(text)
    r = run_cli("--baseline", "b.json", "--output-format", "json", "m.py")
    assert r.exit_code == 1
    rows = sorted(d["location"]["row"] for d in json.loads(r.output))
    assert rows == [12, 12, 16]  # both calls of the edited statement and the new function; forward stays hidden


def test_duplicate_statements_are_counted(repo):
    (repo / "m.py").write_text("import torch\ny = torch.mm(a, b)\n")
    run_cli("--write-baseline", "b.json", "m.py")
    (repo / "m.py").write_text("import torch\ny = torch.mm(a, b)\ny = torch.mm(a, b)\n")
    r = run_cli("--baseline", "b.json", "--output-format", "json", "m.py")
    assert [d["location"]["row"] for d in json.loads(r.output)] == [3]


def test_baseline_works_from_another_folder(repo):
    (repo / "sub").mkdir()
    run_cli("--write-baseline", "sub/b.json", "m.py")
    os.chdir(repo / "sub")
    r = run_cli("--baseline", "b.json", str(repo / "m.py"))
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("content,needle", [
    (None, "baseline file not found"),
    ("{not json", "corrupt baseline"),
    ('{"format": "something-else", "findings": []}', "not a dtypelint baseline"),
    ('{"format": "dtypelint-baseline", "version": 1, "fingerprint_version": "1", "findings": [3]}', "corrupt baseline"),
])
def test_missing_or_corrupt_baseline_is_exit_2(repo, content, needle):
    if content is not None:
        (repo / "b.json").write_text(content)
    r = run_cli("--baseline", "b.json", "m.py")
    assert r.exit_code == 2
    assert "b.json" in r.output and needle in r.output


def test_write_is_atomic_and_replaces(repo, monkeypatch):
    (repo / "b.json").write_text("old")
    run_cli("--write-baseline", "b.json", "m.py")
    assert json.loads((repo / "b.json").read_text())["format"] == "dtypelint-baseline"
    assert sorted(p.name for p in repo.iterdir() if p.name.startswith(".b.json")) == []

    import dtypelint.baseline as bl

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bl.os, "replace", boom)
    before = (repo / "b.json").read_text()
    r = run_cli("--write-baseline", "b.json", "m.py")
    assert r.exit_code == 2 and "No space left" in r.output
    assert (repo / "b.json").read_text() == before  # the old baseline is intact
    assert [p.name for p in repo.iterdir() if p.name.startswith(".b.json")] == []


def test_write_baseline_exits_zero_even_with_findings_and_problems(repo):
    (repo / "broken.py").write_text("import torch\ndef f(:\n")
    r = run_cli("--write-baseline", "b.json", ".")
    assert r.exit_code == 0
    codes = sorted(f["code"] for f in json.loads((repo / "b.json").read_text())["findings"])
    assert codes == ["DTL001", "DTL999", "DTL999"]
    assert run_cli("--baseline", "b.json", ".").exit_code == 0


def test_baseline_applies_to_fix_mode(project):
    """`--fix --baseline`: fixes are applied, and only findings outside the baseline fail the run."""
    import shutil
    from pathlib import Path

    seeds = Path(__file__).resolve().parent.parent / "fixtures"
    shutil.copy(seeds / "seed5_t5_keep_fp32.py", project / "legacy.py")  # DTL104: no fix available
    assert run_cli("--write-baseline", "b.json", "legacy.py").exit_code == 0
    r = run_cli("--fix", "--baseline", "b.json", "legacy.py")
    assert r.exit_code == 0 and "1 baselined finding hidden" in r.output, r.output
    r = run_cli("--fix", "legacy.py")
    assert r.exit_code == 1 and "DTL104" in r.output


def test_write_baseline_with_fix_is_a_usage_error(repo):
    r = run_cli("--fix", "--write-baseline", "b.json", "m.py")
    assert r.exit_code == 2 and "--write-baseline cannot be combined" in r.output
