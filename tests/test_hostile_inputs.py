"""Hostile inputs: each is reported (a DTL0xx diagnostic naming the file) and the run goes on.

The same tree is checked end to end through the console script (worker processes: a native
parser crash is isolated there) and in this process (everything but the native crash).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, cli_env, run_script, write_tree

SEED = (REPO / "fixtures" / "seed1_dit_vanilla_attention.py").read_text()
SEED_ROW = 29  # where the seed's DTL101 is reported

random.seed(14)
NO_NUL_NOISE = bytes(random.randrange(128, 256) for _ in range(3000))  # never valid UTF-8 for long
NUL_NOISE = bytes(random.randrange(256) for _ in range(3000)) + b"\x00"

# file -> (code, a phrase of its message); None: no diagnostic at all
EXPECTED: dict[str, tuple[str, str] | None] = {
    "good.py": ("DTL101", "reach `@`"),
    "syntax.py": ("DTL001", "expected ':'"),
    "tabs.py": ("DTL001", "inconsistent use of tabs and spaces"),
    "nul.py": ("DTL003", "NUL bytes"),
    "noise_with_nul.py": ("DTL003", "NUL bytes"),
    "noise.py": ("DTL002", "cannot decode line 1 as utf-8"),
    "latin1_without_cookie.py": ("DTL002", "invalid byte 0xe9"),
    "unknown_cookie.py": ("DTL002", "bad encoding declaration"),
    "empty.py": None,
    "only_bom.py": None,
    "blank_lines.py": None,
    "huge_literal.py": ("DTL101", "reach `@`"),
    "self_loop.py": ("DTL004", "symbolic link loop"),
    "loop_a.py": ("DTL004", "symbolic link loop"),
    "loop_b.py": ("DTL004", "symbolic link loop"),
    "dangling.py": ("DTL004", "broken symbolic link"),
    "pkg/up": ("DTL004", "symbolic link loop"),
    "pkg/m.py": ("DTL101", "reach `@`"),
    "notebook.ipynb": ("DTL002", "invalid notebook JSON"),  # broken JSON: reported, not a crash
}
DEEP = ("deep.py", ("DTL001", "too many nested parentheses"))  # CPython's own parser limit


def hostile_tree(root: Path, native_crash: bool) -> Path:
    files: dict[str, str | bytes] = {
        "good.py": SEED,
        "syntax.py": "import torch\ndef f(x)\n    return x\n",
        "tabs.py": "import torch\ndef f(x):\n\tif x:\n        return x.float()\n\treturn x\n",
        "nul.py": b"import torch\x00\ndef f(x):\n    return x\n",
        "noise_with_nul.py": NUL_NOISE,
        "noise.py": NO_NUL_NOISE,
        "latin1_without_cookie.py": b"import torch\ndef f(x):\n    return '\xe9'\n",
        "unknown_cookie.py": b"# -*- coding: klingon -*-\nimport torch\n",
        "empty.py": b"",
        "only_bom.py": b"\xef\xbb\xbf",
        "blank_lines.py": "\n" * 100000,
        # several MB in one file: a 3 MB string literal in front of a real hazard
        "huge_literal.py": 'BLOB = """' + ("x" * 99 + "\n") * 30000 + '"""\n' + SEED,
        "pkg/m.py": SEED,
        "notebook.ipynb": '{"cells": [',
    }
    if native_crash:
        files["deep.py"] = "import torch\ndef f(x):\n    return x\nx = " + "(" * 10000 + "1" + ")" * 10000 + "\n"
    write_tree(root, files)
    (root / "self_loop.py").symlink_to("self_loop.py")
    (root / "loop_a.py").symlink_to("loop_b.py")
    (root / "loop_b.py").symlink_to("loop_a.py")
    (root / "dangling.py").symlink_to("gone.py")
    (root / "pkg" / "up").symlink_to("..")
    return root


def huge_literal_row() -> int:
    return 30000 + 1 + SEED_ROW


def check_report(diags: list[dict], expected: dict) -> None:
    by_file: dict[str, list[dict]] = {}
    for d in diags:
        by_file.setdefault(d["filename"], []).append(d)
    for name, want in expected.items():
        got = by_file.get(name, [])
        if want is None:
            assert got == [], name
            continue
        code, phrase = want
        assert [d["code"] for d in got] == [code], (name, got)
        assert phrase in got[0]["message"], (name, got[0]["message"])
    assert set(by_file) <= set(expected), set(by_file) - set(expected)
    assert "DTL005" not in {d["code"] for n, ds in by_file.items() if n != "deep.py" for d in ds}
    (big,) = by_file["huge_literal.py"]
    assert big["location"]["row"] == huge_literal_row()


def test_hostile_tree_through_the_console_script(script, tmp_path):
    root = hostile_tree(tmp_path, native_crash=True)
    proc = run_script(script, ["check", "--no-cache", "-j", "2", "--output-format", "json", "."], cwd=root)
    assert proc.returncode == 1, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    check_report(json.loads(proc.stdout), {**EXPECTED, DEEP[0]: DEEP[1]})
    # and in the other formats: every problem names its file, nothing crashes
    (root / "deep.py").unlink()  # (its crash isolation costs seconds per run)
    for fmt in ("full", "concise", "sarif", "github", "gitlab", "junit", "lsp"):
        out = run_script(script, ["check", "--no-cache", "-j", "2", "--output-format", fmt, "."], cwd=root)
        assert out.returncode == 1 and b"Traceback" not in out.stderr, (fmt, out.stderr.decode())


def test_hostile_tree_in_process(tmp_path, monkeypatch, invoke):
    root = hostile_tree(tmp_path, native_crash=False)
    monkeypatch.chdir(root)
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json", "."])
    assert res.exit_code == 1
    check_report(json.loads(res.stdout), EXPECTED)


def test_hostile_files_named_one_by_one(script, tmp_path):
    """Named on the command line, each still gets its diagnostic (no crash, no hang)."""
    root = hostile_tree(tmp_path, native_crash=False)
    os.mkfifo(root / "pipe.py")
    names = [n for n in EXPECTED if n != "pkg/up"] + ["pipe.py"]
    proc = run_script(script, ["check", "--no-cache", "--output-format", "json", *names], cwd=root)
    assert proc.returncode == 1, proc.stderr.decode()
    expected = {n: EXPECTED[n] for n in names if n in EXPECTED}
    expected["pipe.py"] = ("DTL004", "not a regular file")
    check_report(json.loads(proc.stdout), expected)


def test_undecodable_file_name_is_reported_in_every_format(script, tmp_path):
    name = os.fsdecode(b"caf\xe9.py")
    (tmp_path / name).write_text("import torch\ndef f(x:\n")
    for fmt in ("json", "full", "sarif", "gitlab", "junit", "lsp", "github"):
        proc = run_script(script, ["check", "--no-cache", "--output-format", fmt, "."], cwd=tmp_path)
        assert proc.returncode == 1 and b"Traceback" not in proc.stderr, (fmt, proc.stderr.decode())
        assert "caf\N{REPLACEMENT CHARACTER}.py" in proc.stdout.decode("utf-8") or fmt == "sarif", fmt


def test_libcst_limits_on_valid_python_are_our_problem_not_a_syntax_error(tmp_path, invoke, monkeypatch):
    """CPython accepts this tab/space mix; libcst's tokenizer does not.  Either it is analysed, or it is
    a DTL005 that says the file is valid Python -- never a DTL001 that blames the user."""
    text = "import torch\r\ndef f(x):\r\n \tif x:\r\n\t  return x\r\n"
    compile(text, "m.py", "exec")
    write_tree(tmp_path, {"m.py": text.encode()})
    monkeypatch.chdir(tmp_path)
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json", "m.py"])
    diags = json.loads(res.stdout)
    assert all(d["code"] == "DTL005" and "valid Python" in d["message"] for d in diags), diags


# -- unreadable files and folders -----------------------------------------------------------


def test_unreadable_file_and_folder_simulated(tmp_path, monkeypatch, invoke):
    """os-level permission errors (simulated: the tests may run as root, which chmod cannot stop)."""
    write_tree(tmp_path, {"ok.py": SEED, "secret.py": SEED, "locked/m.py": SEED})
    real_scandir, real_read = os.scandir, Path.read_bytes

    def scandir(path="."):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def read_bytes(self):
        if self.name == "secret.py":
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.chdir(tmp_path)
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json", "."])
    got = sorted((d["filename"], d["code"], "Permission denied" in d["message"]) for d in json.loads(res.stdout))
    assert got == [("locked", "DTL004", True), ("ok.py", "DTL101", False), ("secret.py", "DTL004", True)]


def _unprivileged() -> dict | None:
    """subprocess keyword arguments that run a child without root's read-anything power, or None."""
    if os.geteuid() != 0:
        return {}
    try:
        probe = subprocess.run([sys.executable, "-c", "import dtypelint, click, libcst"], user=65534, group=65534,
                               env=cli_env(), capture_output=True, cwd="/", timeout=60)
    except OSError:  # the interpreter itself is out of reach (e.g. under /root)
        return None
    return {"user": 65534, "group": 65534} if probe.returncode == 0 else None


def test_unreadable_file_and_folder_for_real(script):
    drop = _unprivileged()
    if drop is None:
        pytest.skip("running as root and the interpreter is not readable by an unprivileged user: "
                    "chmod 000 cannot stop root (the simulated test covers the behaviour)")
    root = Path(tempfile.mkdtemp(prefix="dtypelint-perm-"))
    try:
        os.chmod(root, 0o777)
        write_tree(root, {"ok.py": SEED, "secret.py": SEED, "locked/m.py": SEED})
        os.chmod(root / "secret.py", 0)
        os.chmod(root / "locked", 0)
        env = cli_env()
        env.pop("PYTHONPATH", None)
        proc = subprocess.run([script, "check", "--no-cache", "--output-format", "json", "."], cwd=root,
                              capture_output=True, env=env, timeout=300, **drop)
        assert proc.returncode == 1, proc.stderr.decode()
        got = sorted((d["filename"], d["code"]) for d in json.loads(proc.stdout))
        assert got == [("locked", "DTL004"), ("ok.py", "DTL101"), ("secret.py", "DTL004")]
    finally:
        os.chmod(root / "locked", stat.S_IRWXU)
        shutil.rmtree(root, ignore_errors=True)


# -- files that change or vanish while the run is under way --------------------------------------


def test_files_that_vanish_or_change_after_discovery(tmp_path, monkeypatch, invoke):
    import dtypelint.engine as cli_mod  # the CLI imports `run` from the engine when it runs

    write_tree(tmp_path, {"vanish.py": SEED, "change.py": SEED, "binary_now.py": SEED, "stay.py": SEED})
    real_run = cli_mod.run

    def run(tasks, options, progress=None):  # after discovery, before any file is read
        (tmp_path / "vanish.py").unlink()
        (tmp_path / "change.py").write_text("import torch\ndef f(x):\n    return (\n")
        (tmp_path / "binary_now.py").write_bytes(b"\x00\x01")
        return real_run(tasks, options, progress)

    monkeypatch.setattr(cli_mod, "run", run)
    monkeypatch.chdir(tmp_path)
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json", "."])
    got = sorted((d["filename"], d["code"]) for d in json.loads(res.stdout))
    assert got == [("binary_now.py", "DTL003"), ("change.py", "DTL001"), ("stay.py", "DTL101"),
                   ("vanish.py", "DTL004")]


def test_file_that_vanishes_between_the_two_phases(tmp_path, monkeypatch, invoke):
    """Phase 1 (summaries) saw it; phase 2 cannot read it: DTL004, the others are checked."""
    from dtypelint import index

    write_tree(tmp_path, {"vanish.py": SEED, "stay.py": SEED})
    real_merge = index.ProjectIndex.merge.__func__

    def merge(cls, parts):
        (tmp_path / "vanish.py").unlink(missing_ok=True)
        return real_merge(cls, parts)

    monkeypatch.setattr(index.ProjectIndex, "merge", classmethod(merge))
    monkeypatch.chdir(tmp_path)
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json", "."])
    got = sorted((d["filename"], d["code"]) for d in json.loads(res.stdout))
    assert got == [("stay.py", "DTL101"), ("vanish.py", "DTL004")]


def test_file_edited_while_it_is_being_fixed_is_left_alone(tmp_path, monkeypatch, invoke):
    import dtypelint.fixer.run as fixer_run

    write_tree(tmp_path, {"m.py": SEED})
    real_fix_text = fixer_run.fix_text

    def fix_text(source, filename, *args, **kwargs):
        result = real_fix_text(source, filename, *args, **kwargs)
        (tmp_path / "m.py").write_text(SEED + "# edited\n")  # the user saves while the fix is computed
        return result

    monkeypatch.setattr(fixer_run, "fix_text", fix_text)
    monkeypatch.chdir(tmp_path)
    res = invoke(["check", "--in-process", "--no-cache", "--fix", "--output-format", "json", "."])
    assert (tmp_path / "m.py").read_text() == SEED + "# edited\n"  # the user's edit wins
    codes = [(d["filename"], d["code"]) for d in json.loads(res.stdout)]
    assert ("m.py", "DTL006") in codes and ("m.py", "DTL101") in codes
    assert "changed on disk" in res.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]  # no temporary file left
