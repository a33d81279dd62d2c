"""Which files `dtypelint check` lints."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import write_tree
from dtypelint.config import ConfigResolver
from dtypelint.discovery import discover
from dtypelint.engine import known_codes


def found(root: Path, paths: list[str] | None = None) -> list[str]:
    r = ConfigResolver(known_codes=known_codes(), cwd=root)
    res = discover([root / p for p in (paths or ["."])], r)
    return sorted(p.resolve().relative_to(root.resolve()).as_posix() for p, _ in res.files)


def test_walk_skips_hidden_venvs_caches_and_gitignored(tmp_path):
    write_tree(tmp_path, {
        "a.py": "", "pkg/b.py": "", "pkg/data.txt": "", "nb.ipynb": "{}",
        ".hidden/c.py": "", "__pycache__/d.py": "", "build/e.py": "", "node_modules/f.py": "",
        "env1/pyvenv.cfg": "", "env1/lib/g.py": "",
        ".gitignore": "generated/\n*_pb2.py\n", "generated/h.py": "", "pkg/i_pb2.py": "",
        "pkg/sub/.gitignore": "local.py\n", "pkg/sub/local.py": "", "pkg/sub/kept.py": "",
    })
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert found(tmp_path) == ["a.py", "nb.ipynb", "pkg/b.py", "pkg/sub/kept.py"]


def test_gitignore_from_git_root_applies_to_subfolder_runs(tmp_path):
    write_tree(tmp_path, {".gitignore": "skip.py\n", "pkg/skip.py": "", "pkg/keep.py": ""})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert found(tmp_path, ["pkg"]) == ["pkg/keep.py"]


def test_respect_gitignore_false(tmp_path):
    write_tree(tmp_path, {".gitignore": "skip.py\n", "skip.py": "", "pyproject.toml": "[tool.dtypelint]\nrespect-gitignore = false\n"})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert found(tmp_path) == ["skip.py"]


def test_exclude_and_extend_exclude(tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": '[tool.dtypelint]\nextend-exclude = ["legacy", "*_gen.py"]\n',
        "legacy/a.py": "", "src/m_gen.py": "", "src/m.py": "", "build/b.py": "",
    })
    assert found(tmp_path) == ["src/m.py"]
    (tmp_path / "pyproject.toml").write_text('[tool.dtypelint]\nexclude = ["legacy"]\n')  # replaces defaults
    assert found(tmp_path) == ["build/b.py", "src/m.py", "src/m_gen.py"]


def test_explicit_file_is_linted_unless_excluded(tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": '[tool.dtypelint]\nextend-exclude = ["legacy"]\n',
        ".hidden/x.py": "", "legacy/y.py": "", ".gitignore": "z.py\n", "z.py": "",
    })
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert found(tmp_path, [".hidden/x.py", "z.py"]) == [".hidden/x.py", "z.py"]
    assert found(tmp_path, ["legacy/y.py"]) == []


def test_duplicates_are_linted_once(tmp_path):
    write_tree(tmp_path, {"a.py": ""})
    assert found(tmp_path, [".", "a.py", "./a.py"]) == ["a.py"]


def test_missing_path_is_a_problem(tmp_path):
    r = ConfigResolver(known_codes=known_codes(), cwd=tmp_path)
    res = discover([tmp_path / "nope"], r)
    assert res.files == [] and res.problems == [(tmp_path / "nope", "No such file or directory")]


def test_symlink_loops_are_problems_and_each_file_is_linted_once(tmp_path):
    write_tree(tmp_path, {"pkg/m.py": "", "pkg/sub/n.py": "", "other/o.py": ""})
    (tmp_path / "pkg" / "sub" / "back").symlink_to("..")  # a loop inside the walk
    (tmp_path / "pkg" / "up").symlink_to("../..")  # leads above the folder that was given
    (tmp_path / "pkg" / "alias").symlink_to("sub")  # the same folder twice: walked once, silently
    (tmp_path / "pkg" / "self.py").symlink_to("self.py")
    res = discover([tmp_path / "pkg"], ConfigResolver(known_codes={}, cwd=tmp_path))
    files = sorted(p.relative_to(tmp_path).as_posix() for p, _ in res.files)
    assert files == ["pkg/alias/n.py", "pkg/m.py"]
    problems = {p.relative_to(tmp_path).as_posix(): why for p, why in res.problems}
    assert sorted(problems) == ["pkg/alias/back", "pkg/self.py", "pkg/up"]  # alias/ comes first: sub/ is its twin
    assert all("symbolic link loop" in why for why in problems.values())
