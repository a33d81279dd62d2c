"""Bad input never stops the run: each problem is a DTL0xx diagnostic naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_module, write_tree
from dtypelint import analysis
from dtypelint.engine import lint_source

GOOD = "import torch\n\ndef f(x):\n    return x\n"


def lint_json(tmp_path: Path, *args: str):
    proc = run_module(["check", "--no-cache", "--output-format", "json", *args], cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return proc.returncode, json.loads(proc.stdout)


def codes_by_file(diags) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in diags:
        out.setdefault(d["filename"], []).append(d["code"])
    return out


def test_each_kind_of_bad_input_is_reported_and_the_rest_is_linted(tmp_path):
    write_tree(tmp_path, {
        "good.py": GOOD,
        "syntax.py": "import torch\ndef f(x)\n    return x\n",
        "binary.py": b"import torch\x00\x01\x02",
        "undecodable.py": b"import torch\nx = '\xe9'\n",
        "deep.py": "import torch\ndef f(x):\n    return x\nx = " + "(" * 20000 + "1" + ")" * 20000 + "\n",
        "latin1.py": b"# -*- coding: latin-1 -*-\nimport torch\nx = '\xe9'\n",
        "bom.py": b"\xef\xbb\xbfimport torch\nx = 1\n",
    })
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing-target.py")
    rc, diags = lint_json(tmp_path)
    assert rc == 1
    by_file = codes_by_file(diags)
    assert by_file == {
        "syntax.py": ["DTL001"],
        "undecodable.py": ["DTL002"],
        "binary.py": ["DTL003"],
        "dangling.py": ["DTL004"],
        "deep.py": ["DTL005"],
    }
    msgs = {d["filename"]: d for d in diags}
    assert msgs["syntax.py"]["location"] == {"row": 2, "column": 9}
    assert "expected ':'" in msgs["syntax.py"]["message"]
    assert msgs["undecodable.py"]["location"]["row"] == 2
    assert "0xe9" in msgs["undecodable.py"]["message"]
    assert "NUL" in msgs["binary.py"]["message"]
    assert "crash" in msgs["deep.py"]["message"]
    assert "broken symbolic link" in msgs["dangling.py"]["message"]


def test_missing_path_on_command_line_is_a_usage_error(tmp_path):
    write_tree(tmp_path, {"bad.py": "import torch\ndef f(:\n"})
    proc = run_module(["check", "--no-cache", "bad.py", "nope.py", "gone/"], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode().strip() == "dtypelint: error: nope.py, gone: no such file or directory"


def test_analysis_exception_becomes_dtl005_on_that_file_only(monkeypatch):
    def boom(ctx):
        if "explode" in ctx.source.text:
            raise ZeroDivisionError("synthetic")
        return []

    monkeypatch.setattr(analysis, "check", boom)
    diags = lint_source("import torch\nexplode = 1\ndef f(x):\n    return x\n", "a.py")
    assert [d.code for d in diags] == ["DTL005"]
    assert "ZeroDivisionError: synthetic" in diags[0].message
    assert lint_source("import torch\nfine = 1\ndef f(x):\n    return x\n", "b.py") == []


def test_prefilter_skips_files_that_cannot_hold_a_hazard(monkeypatch):
    seen = []
    monkeypatch.setattr(analysis, "check", lambda ctx: seen.append(ctx.filename) or [])
    lint_source("def f(x:\n", "no_torch_but_broken.py")  # not parsed: no syntax error either
    lint_source("x = 1\n", "plain.py")
    lint_source("import torch\n\ndef f(q, k):\n    return q.float() @ k\n", "model.py")
    assert seen == ["model.py"]


@pytest.mark.parametrize("text,row", [("import torch\ndef f(x):\n    return (\n", 3),
                                      ("import torch\n  def f(x):\n    pass\n", 2)])
def test_syntax_error_positions(text, row):
    (d,) = lint_source(text, "m.py")
    assert d.code == "DTL001" and d.start.row == row


def test_native_crash_on_stdin_and_with_one_job_is_isolated(tmp_path):
    deep = ("import torch\ndef f(x):\n    return x\nx = " + "(" * 20000 + "1" + ")" * 20000 + "\n").encode()
    proc = run_module(["check", "-", "--stdin-filename", "deep.py", "--output-format", "json"], cwd=tmp_path, input=deep)
    assert proc.returncode == 1
    assert [d["code"] for d in json.loads(proc.stdout)] == ["DTL005"]
    write_tree(tmp_path, {"deep.py": deep, "bad.py": "import torch\ndef f(:\n"})
    rc, diags = lint_json(tmp_path, "-j", "1")
    assert sorted((d["filename"], d["code"]) for d in diags) == [("bad.py", "DTL001"), ("deep.py", "DTL005")]


def test_columns_count_code_points_in_cookie_encoded_files(tmp_path, hazard_rule, invoke, monkeypatch):
    write_tree(tmp_path, {
        "m.py": b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9\xe9'; y = HAZARD\n",
        "b.py": b"\xef\xbb\xbf" + "import torch\ns = '\u00e9\u00e9'; y = HAZARD\n".encode(),
    })
    monkeypatch.chdir(tmp_path)
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json"])
    locs = {d["filename"]: (d["location"]["row"], d["location"]["column"]) for d in json.loads(res.stdout)}
    assert locs == {"m.py": (3, 15), "b.py": (2, 15)}
