"""Bad input never stops the run: each problem is a DTL0xx diagnostic naming the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_module, write_tree
from dtypelint import analysis, rules
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
        "deeper.py": "import torch\ndef f(x):\n    return x\nx = " + "-" * 3000 + "1\n",
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
        "deep.py": ["DTL001"],  # CPython's parser refuses it: a syntax error, with CPython's message
        "deeper.py": ["DTL005"],  # CPython's parser gives up (RecursionError): could not analyse
    }
    msgs = {d["filename"]: d for d in diags}
    assert msgs["syntax.py"]["location"] == {"row": 2, "column": 9}
    assert "expected ':'" in msgs["syntax.py"]["message"]
    assert msgs["undecodable.py"]["location"]["row"] == 2
    assert "0xe9" in msgs["undecodable.py"]["message"]
    assert "NUL" in msgs["binary.py"]["message"]
    assert "too many nested parentheses" in msgs["deep.py"]["message"]
    assert "nested too deeply" in msgs["deeper.py"]["message"]
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

    monkeypatch.setattr(rules, "check", boom)
    diags = lint_source("import torch\nexplode = 1\ndef f(x):\n    return x\n", "a.py")
    assert [d.code for d in diags] == ["DTL005"]
    assert "ZeroDivisionError: synthetic" in diags[0].message
    assert lint_source("import torch\nfine = 1\ndef f(x):\n    return x\n", "b.py") == []


def test_prefilter_skips_files_that_cannot_hold_a_hazard(monkeypatch):
    seen = []
    monkeypatch.setattr(rules, "check", lambda ctx: seen.append(ctx.filename) or [])
    lint_source("def f(x:\n", "no_torch_but_broken.py")  # not parsed: no syntax error either
    lint_source("x = 1\n", "plain.py")
    lint_source("import torch\n\ndef f(q, k):\n    return q.float() @ k\n", "model.py")
    assert seen == ["model.py"]


@pytest.mark.parametrize("text,row", [("import torch\ndef f(x):\n    return (\n", 3),
                                      ("import torch\n  def f(x):\n    pass\n", 2)])
def test_syntax_error_positions(text, row):
    (d,) = lint_source(text, "m.py")
    assert d.code == "DTL001" and d.start.row == row


def test_deep_nesting_on_stdin_and_with_one_job_is_a_syntax_error_not_a_crash(tmp_path):
    deep = ("import torch\ndef f(x):\n    return x\nx = " + "(" * 20000 + "1" + ")" * 20000 + "\n").encode()
    proc = run_module(["check", "-", "--stdin-filename", "deep.py", "--output-format", "json"], cwd=tmp_path, input=deep)
    assert proc.returncode == 1
    assert [d["code"] for d in json.loads(proc.stdout)] == ["DTL001"]
    write_tree(tmp_path, {"deep.py": deep, "bad.py": "import torch\ndef f(:\n"})
    rc, diags = lint_json(tmp_path, "-j", "1")
    assert sorted((d["filename"], d["code"]) for d in diags) == [("bad.py", "DTL001"), ("deep.py", "DTL001")]


class _CrashingFixStep:
    """A fix step that kills its worker process on one file, like a native libcst crash."""

    def __call__(self, task, data, view, out, lint):
        if task.filename == "crash.py":
            os._exit(139)
        out.fix = "fixed"
        return out


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_fix_step_that_kills_its_worker_is_dtl005_on_that_file_only(tmp_path, jobs):
    """Fix steps (libcst) run in worker processes: a native crash costs one file, not the run."""
    from dtypelint.config import Settings
    from dtypelint.engine import RunOptions, build_tasks, run

    names = ["a.py", "crash.py", "b.py", "c.py"]
    write_tree(tmp_path, {n: GOOD for n in names})
    tasks = build_tasks([(tmp_path / n, Settings(root=tmp_path)) for n in names])
    tasks = [t.__class__(**{**t.__dict__, "filename": n, "fix": _CrashingFixStep()}) for t, n in zip(tasks, names)]
    result = run(tasks, RunOptions(jobs=jobs))
    by_name = {o.filename: o for o in result.outcomes}
    assert [o.filename for o in result.outcomes] == names
    assert [d.code for d in by_name["crash.py"].diagnostics] == ["DTL005"]
    assert "worker process" in by_name["crash.py"].diagnostics[0].message
    assert all(by_name[n].fix == "fixed" and not by_name[n].diagnostics for n in names if n != "crash.py")


def test_columns_count_code_points_in_cookie_encoded_files(tmp_path, hazard_rule, invoke, monkeypatch):
    write_tree(tmp_path, {
        "m.py": b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9\xe9'; y = HAZARD\n",
        "b.py": b"\xef\xbb\xbf" + "import torch\ns = '\u00e9\u00e9'; y = HAZARD\n".encode(),
    })
    monkeypatch.chdir(tmp_path)
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json"])
    locs = {d["filename"]: (d["location"]["row"], d["location"]["column"]) for d in json.loads(res.stdout)}
    assert locs == {"m.py": (3, 15), "b.py": (2, 15)}


def test_syntax_errors_come_from_cpython_and_the_engine_imports_nothing_above_it():
    """DTL001 carries CPython's message and position; linting never loads libcst, the fixer or notebooks."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from dtypelint.engine import lint_source\n"
        "(d,) = lint_source('import torch\\nx = (1,\\n  2\\ndef f(x):\\n    return x\\n', 'm.py')\n"
        "print(d.code, d.start.row, d.start.column, d.message)\n"
        "print(sorted(m for m in ('libcst', 'dtypelint.fixer', 'dtypelint.source.notebook', 'dtypelint.reporters',"
        " 'rich', 'multiprocessing') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    try:
        compile("import torch\nx = (1,\n  2\ndef f(x):\n    return x\n", "m.py", "exec")
    except SyntaxError as exc:
        expected = f"DTL001 {exc.lineno} {exc.offset} SyntaxError: {exc.msg}"
    assert out[0] == expected
    assert out[1] == "[]"


def test_version_starts_without_the_engine_rich_or_libcst():
    import subprocess
    import sys

    code = ("import sys\nfrom dtypelint.cli import main\nsys.argv = ['dtypelint', '--version']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('libcst', 'rich', 'dtypelint.engine', 'dtypelint.analysis') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("dtypelint ")
    assert out[-1] == "[]"
