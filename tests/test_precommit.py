"""The pre-commit hooks, run by the real `pre-commit try-repo` against a committed copy of this project.

pre-commit installs the hook repository with pip into its own environment (from
PyPI), so this checks the packaging too: a fresh install of dtypelint runs as a
hook.  The hook environment is built once per test session.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

GOOD = "import torch\n\n\ndef f(x):\n    return x + 1\n"
BAD = "import torch\n\n\ndef f(x)\n    return x + 1\n"  # DTL001: the hook must fail and name it
SEED = ROOT / "fixtures" / "seed1_dit_vanilla_attention.py"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                               "HOME": str(cwd), "PATH": "/usr/bin:/bin:/usr/local/bin"}).stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Path:
    """This project, copied and committed (try-repo needs a commit)."""
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in ("dtypelint", "rules"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, repo / name)
    if not (repo / "README.md").exists():  # pyproject names it; the worktree may not have it yet
        (repo / "README.md").write_text("# dtypelint\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hook repo")
    return repo


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def user_repo(tmp_path) -> Path:
    repo = tmp_path / "user"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "good.py").write_text(GOOD)
    (repo / "bad.py").write_text(BAD)
    (repo / "notes.txt").write_text("def f(:\n")  # not python: the hook must not see it
    (repo / "dit.py").write_text(SEED.read_text())  # a real DTL101 hazard with a safe fix
    (repo / "dit.ipynb").write_text(json.dumps({  # the same code in a notebook cell, after a magic
        "cells": [{"cell_type": "code", "execution_count": None, "id": "a", "metadata": {}, "outputs": [],
                   "source": ["%load_ext autoreload\n", *SEED.read_text().splitlines(keepends=True)]}],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n")
    git(repo, "add", "-A")
    return repo


def try_repo(hook_repo: Path, user_repo: Path, home: Path, hook: str, *files: str) -> subprocess.CompletedProcess:
    import os

    env = dict(os.environ, PRE_COMMIT_HOME=str(home), NO_COLOR="1", PRE_COMMIT_COLOR="never",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    env.pop("PYTHONPATH", None)  # the hook must run from its own fresh install
    args = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--verbose", "--color", "never"]
    args += ["--files", *files] if files else ["--all-files"]
    return subprocess.run(args, cwd=user_repo, env=env, capture_output=True, text=True, timeout=600)


def test_hooks_file_is_valid():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    by_id = {h["id"]: h for h in hooks}
    assert set(by_id) == {"dtypelint", "dtypelint-fix"}
    for h in hooks:
        assert h["language"] == "python" and h["types_or"] == ["python", "jupyter"]
        assert h["require_serial"] is False
        assert h["entry"].startswith("dtypelint check")
    assert "--fix" in by_id["dtypelint-fix"]["entry"].split()
    from pre_commit.clientlib import MANIFEST_HOOK_DICT  # pre-commit's own manifest schema
    from pre_commit.clientlib import cfgv

    for h in hooks:
        cfgv.validate(h, MANIFEST_HOOK_DICT)


def test_try_repo_fails_on_a_finding_and_passes_on_clean_files(hook_repo, user_repo, pre_commit_home):
    failing = try_repo(hook_repo, user_repo, pre_commit_home, "dtypelint", "bad.py", "good.py", "notes.txt")
    out = failing.stdout + failing.stderr
    assert failing.returncode == 1, out
    assert "Failed" in out and "DTL001" in out and "bad.py" in out
    assert "notes.txt" not in out  # types_or keeps non-Python files away from the hook

    passing = try_repo(hook_repo, user_repo, pre_commit_home, "dtypelint", "good.py")
    out = passing.stdout + passing.stderr
    assert passing.returncode == 0, out
    assert "Passed" in out


def test_try_repo_with_no_python_files_is_skipped(hook_repo, user_repo, pre_commit_home):
    res = try_repo(hook_repo, user_repo, pre_commit_home, "dtypelint", "notes.txt")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "no files to check" in out.lower() and "Skipped" in out


def test_try_repo_reports_a_real_hazard(hook_repo, user_repo, pre_commit_home):
    res = try_repo(hook_repo, user_repo, pre_commit_home, "dtypelint", "dit.py", "dit.ipynb")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "dit.py:29:13: DTL101" in out and "[*]" in out
    assert "dit.ipynb:cell 1:30:13: DTL101" in out  # types_or includes jupyter


def test_fix_hook_fixes_then_passes(hook_repo, user_repo, pre_commit_home):
    res = try_repo(hook_repo, user_repo, pre_commit_home, "dtypelint-fix", "dit.py", "good.py")
    out = res.stdout + res.stderr
    assert res.returncode == 1, out  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in out
    assert "x = attn.to(v.dtype) @ v" in (user_repo / "dit.py").read_text()
    git(user_repo, "add", "-A")
    again = try_repo(hook_repo, user_repo, pre_commit_home, "dtypelint-fix", "dit.py", "good.py")
    assert again.returncode == 0 and "Passed" in again.stdout, again.stdout + again.stderr


def test_cli_with_zero_paths_from_a_hook_checks_nothing(tmp_path):
    import os

    (tmp_path / "bad.py").write_text(BAD)
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    res = subprocess.run([sys.executable, "-m", "dtypelint", "check", "--no-default-paths", "--no-cache"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 0 and "All checks passed" in res.stdout
    res = subprocess.run([sys.executable, "-m", "dtypelint", "check", "--no-cache"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 1 and "DTL001" in res.stdout  # without the flag: the folder, as documented
