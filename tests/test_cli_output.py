"""Output formats, exit codes and report destinations of `dtypelint check`."""

from __future__ import annotations

import json

import pytest

from conftest import FAKE_CODE, write_tree

MODEL = "import torch\n\n\ndef attend(attn, v):\n    return HAZARD @ v\n"


@pytest.fixture
def project(tmp_path, monkeypatch, hazard_rule):
    write_tree(tmp_path, {"model.py": MODEL, "clean.py": "import torch\nx = 1\n"})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_json_contract(project, invoke):
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json"])
    assert res.exit_code == 1
    (d,) = json.loads(res.stdout)
    assert set(d) == {"code", "name", "message", "severity", "filename", "location", "end_location",
                      "regimes", "path", "fix", "url"}
    assert d["code"] == FAKE_CODE and d["name"] == "fake-hazard" and d["severity"] == "error"
    assert d["filename"] == "model.py"
    assert d["location"] == {"row": 5, "column": 12} and d["end_location"] == {"row": 5, "column": 18}
    assert d["regimes"] == ["half"]
    assert d["path"][0] == {"filename": "model.py", "row": 1, "column": 1, "message": "source: made fp32 here"}
    assert d["fix"] == {"applicability": "safe", "message": "Replace `HAZARD` with `SAFE`", "edits": [
        {"content": "SAFE", "location": {"row": 5, "column": 12}, "end_location": {"row": 5, "column": 18}}]}
    assert d["url"].endswith("/DTL199-fake-hazard/")


def test_full_format_has_frame_path_regimes_fix_and_summary(project, invoke):
    res = invoke(["check", "--in-process", "--no-cache"])
    out = res.stdout
    assert res.exit_code == 1
    assert f"model.py:5:12: {FAKE_CODE} [*] `HAZARD` (float32)" in out
    assert "5 |     return HAZARD @ v" in out
    assert "  |            ^^^^^^ DTL199" in out
    assert "1. model.py:1:1 source: made fp32 here" in out
    assert "2. model.py:5:12 sink: matmul requires equal dtypes" in out
    assert "breaks when: half (model converted with .half()" in out
    assert "fix (safe): Replace `HAZARD` with `SAFE`" in out
    assert "Found 1 finding in 2 files checked. [*] 1 fixable with the `--fix` option." in out
    assert "\x1b[" not in out  # not a terminal: no colour


def test_concise_format_one_line_each(project, invoke):
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "concise"])
    lines = res.stdout.splitlines()
    assert lines[0] == f"model.py:5:12: {FAKE_CODE} [*] `HAZARD` (float32) reaches `@` with `v` (float16) [half]"
    assert lines[1].startswith("Found 1 finding")


def test_clean_run_exits_zero(project, invoke):
    res = invoke(["check", "--in-process", "--no-cache", "clean.py"])
    assert res.exit_code == 0
    assert "All checks passed!" in res.stdout


def test_exit_zero(project, invoke):
    res = invoke(["check", "--in-process", "--no-cache", "--exit-zero"])
    assert res.exit_code == 0 and FAKE_CODE in res.stdout


def test_output_file(project, invoke):
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json", "-o", "out/report.json"])
    assert res.exit_code == 1
    assert res.stdout == ""
    assert json.loads((project / "out" / "report.json").read_text())[0]["code"] == FAKE_CODE


def test_colour_only_on_terminals_and_never_with_no_color(project, monkeypatch, capsys):
    import io

    from dtypelint.cli import use_color

    class TTY(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(TTY()) is True
    assert use_color(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(TTY()) is False


def test_select_and_ignore_on_command_line(project, invoke):
    assert invoke(["check", "--in-process", "--no-cache", "--ignore", FAKE_CODE]).exit_code == 0
    assert invoke(["check", "--in-process", "--no-cache", "--select", "DTL0"]).exit_code == 0
    assert invoke(["check", "--in-process", "--no-cache", "--select", "DTL0," + FAKE_CODE]).exit_code == 1
    res = invoke(["check", "--in-process", "--no-cache", "--select", "XYZ9"])
    assert res.exit_code == 2
    assert "unknown rule selector 'XYZ9'" in res.stderr


def test_stdin_with_filename(project, invoke):
    res = invoke(["check", "-", "--stdin-filename", "pkg/attn.py", "--output-format", "concise"], input=MODEL)
    assert res.exit_code == 1
    assert res.stdout.startswith(f"pkg/attn.py:5:12: {FAKE_CODE}")


def test_stdin_cannot_mix_with_paths(project, invoke):
    res = invoke(["check", "-", "model.py"], input=MODEL)
    assert res.exit_code == 2
