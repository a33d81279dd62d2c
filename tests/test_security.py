"""dtypelint reads code, it never runs it; reports name paths as the user did; --fix writes only inside
the linted paths."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import REPO, cli_env, run_script, write_tree

SEED = (REPO / "fixtures" / "seed1_dit_vanilla_attention.py").read_text()
UNSAFE_FIX_SEED = (REPO / "fixtures" / "seed5_t5_no_cast_variant.py").read_text()

# Modules a careless linter could import: the project's own, and names that shadow what dtypelint imports.
SHADOWS = ("json", "click", "libcst", "rich", "pathspec", "torch", "typing_extensions", "tomllib", "tomli",
           "pygls", "lsprotocol", "sitecustomize", "usercustomize", "conftest", "setup", "dtypelint_plugin")


def side_effect(markers: Path, name: str) -> str:
    return f"open({str(markers / name)!r}, 'w').write('imported')\n"


def booby_trapped_project(root: Path, markers: Path) -> Path:
    markers.mkdir()
    files: dict[str, str] = {name + ".py": side_effect(markers, name) for name in SHADOWS}
    files.update({
        "model.py": side_effect(markers, "model") + SEED,
        "t5.py": side_effect(markers, "t5") + UNSAFE_FIX_SEED,
        "pkg/__init__.py": side_effect(markers, "pkg"),
        "pkg/layers.py": side_effect(markers, "pkg.layers") + "from pkg import helpers\n" + SEED,
        "pkg/helpers.py": side_effect(markers, "pkg.helpers") + "import torch\n\ndef up(x):\n    return x.float()\n",
        "nb.ipynb": json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                           "source": side_effect(markers, "notebook") + SEED}],
                                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
    })
    write_tree(root, files)
    return root


def no_markers(markers: Path) -> None:
    assert sorted(p.name for p in markers.iterdir()) == []


@pytest.fixture
def trapped(tmp_path):
    project = booby_trapped_project(tmp_path / "project", tmp_path / "markers")
    return project, tmp_path / "markers"


def test_check_fix_and_diff_never_import_the_code(script, trapped):
    project, markers = trapped
    checked = run_script(script, ["check", "--no-cache", "--output-format", "json", "."], cwd=project)
    assert checked.returncode == 1, checked.stderr.decode()
    assert {d["filename"] for d in json.loads(checked.stdout)} >= {"model.py", "pkg/layers.py", "nb.ipynb"}
    diff = run_script(script, ["check", "--no-cache", "--diff", "--unsafe-fixes", "."], cwd=project)
    assert diff.returncode == 1 and b"+++" in diff.stdout
    fixed = run_script(script, ["check", "--fix", "--unsafe-fixes", "-j", "2", "."], cwd=project)
    assert fixed.returncode in (0, 1), fixed.stderr.decode()
    assert (project / "model.py").read_text() != side_effect(markers, "model") + SEED  # fixes were applied
    no_markers(markers)


def test_python_dash_m_in_the_project_folder_does_not_import_its_modules(trapped):
    """``python -m`` puts the working folder first on sys.path: a json.py there must not shadow the real one."""
    import subprocess

    project, markers = trapped
    env = cli_env()
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-m", "dtypelint", "check", "--no-cache", "--output-format", "json", "."],
                          cwd=project, env=env, capture_output=True, timeout=300)
    assert proc.returncode == 1, proc.stderr.decode()
    assert json.loads(proc.stdout)
    no_markers(markers)


def test_lsp_never_imports_the_code(trapped):
    pytest.importorskip("pygls")
    from lsp_wire import WireClient

    project, markers = trapped
    env = cli_env()
    env["PYTHONPATH"] = str(REPO)
    client = WireClient([sys.executable, "-m", "dtypelint", "lsp", "--debounce", "0.05"], cwd=project, env=env)
    try:
        client.initialize(project)
        for name in ("model.py", "pkg/layers.py", "json.py", "t5.py"):
            uri = (project / name).as_uri()
            client.open(uri, (project / name).read_text())
            diags = client.diagnostics(uri, timeout=60)
            if name != "json.py":
                assert diags, name
                rng = diags[0]["range"]
                actions = client.request("textDocument/codeAction", {
                    "textDocument": {"uri": uri}, "range": rng, "context": {"diagnostics": diags}})
                assert actions["result"], name
                client.request("textDocument/codeAction", {
                    "textDocument": {"uri": uri}, "range": rng,
                    "context": {"diagnostics": diags, "only": ["source.fixAll.dtypelint"]}})
                client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": rng["start"]})
            client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    finally:
        assert client.close() == 0, client.stderr
    no_markers(markers)


# -- paths as the user named them ---------------------------------------------------------


def test_symlinked_files_are_reported_under_the_name_the_user_gave(script, tmp_path, invoke, monkeypatch):
    write_tree(tmp_path, {"real/model.py": SEED})
    (tmp_path / "link.py").symlink_to("real/model.py")
    (tmp_path / "linked_dir").symlink_to("real")
    cases = (("link.py", "link.py"), ("linked_dir/model.py", "linked_dir/model.py"), ("linked_dir", "linked_dir/model.py"))
    for target, name in cases:
        proc = run_script(script, ["check", "--no-cache", "--output-format", "json", target], cwd=tmp_path)
        assert [d["filename"] for d in json.loads(proc.stdout)] == [name]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path))
    for target, name in cases:
        for fmt in ("concise", "full", "sarif", "gitlab", "junit", "lsp", "github"):
            res = invoke(["check", "--in-process", "--no-cache", "--output-format", fmt, target])
            assert res.exit_code == 1, fmt
            assert name in res.stdout and "real/model.py" not in res.stdout, (target, fmt, res.stdout[:2000])


# -- --fix writes only inside the linted paths -----------------------------------------------------


def escape_layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    outside = tmp_path / "outside"
    write_tree(outside, {"victim.py": SEED, "lib/v.py": SEED})
    project = tmp_path / "project"
    write_tree(project, {"src/model.py": SEED})
    (project / "escape.py").symlink_to(outside / "victim.py")
    (project / "vendor").symlink_to(outside / "lib")
    (project / "alias.py").symlink_to("src/model.py")  # a link that stays inside: followed
    return project, outside, project / "src" / "model.py"


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_fix_does_not_write_through_links_leading_outside(script, tmp_path, jobs):
    project, outside, inside = escape_layout(tmp_path)
    proc = run_script(script, ["check", "--no-cache", "--fix", "--output-format", "json", "-j", jobs, "."], cwd=project)
    assert proc.returncode == 1, proc.stderr.decode()
    assert (outside / "victim.py").read_text() == SEED and (outside / "lib" / "v.py").read_text() == SEED
    assert inside.read_text() != SEED  # fixed through alias.py
    assert (project / "alias.py").is_symlink() and (project / "escape.py").is_symlink()
    refused = {d["filename"]: d["message"] for d in json.loads(proc.stdout) if d["code"] == "DTL006"}
    assert set(refused) == {"escape.py", "vendor/v.py"}
    assert all("outside the linted paths" in m for m in refused.values())
    assert sorted(os.listdir(outside)) == ["lib", "victim.py"] and os.listdir(outside / "lib") == ["v.py"]


def test_fix_of_a_named_link_leading_outside_is_refused_but_a_named_outside_file_is_fixed(script, tmp_path):
    project, outside, _ = escape_layout(tmp_path)
    proc = run_script(script, ["check", "--no-cache", "--fix", "escape.py"], cwd=project)
    assert proc.returncode == 1 and (outside / "victim.py").read_text() == SEED
    assert b"outside the linted paths" in proc.stdout
    proc = run_script(script, ["check", "--no-cache", "--fix", str(outside / "victim.py")], cwd=project)
    assert (outside / "victim.py").read_text() != SEED, proc.stdout.decode()  # named by the user: allowed


def test_write_atomic_within(tmp_path):
    from dtypelint.fixer.write import WriteError, write_atomic

    write_tree(tmp_path, {"in/a.py": "a\n", "out/b.py": "b\n"})
    (tmp_path / "in" / "link.py").symlink_to(tmp_path / "out" / "b.py")
    with pytest.raises(WriteError, match="outside the linted paths"):
        write_atomic(tmp_path / "in" / "link.py", b"x\n", within=(tmp_path / "in",))
    assert (tmp_path / "out" / "b.py").read_text() == "b\n"
    write_atomic(tmp_path / "in" / "link.py", b"x\n", within=(tmp_path,))
    assert (tmp_path / "out" / "b.py").read_text() == "x\n" and (tmp_path / "in" / "link.py").is_symlink()
    write_atomic(tmp_path / "in" / "a.py", b"y\n", within=(tmp_path / "in",))
    # a sibling folder whose name merely starts with the root's name is not inside it
    write_tree(tmp_path, {"in2/c.py": "c\n"})
    (tmp_path / "in" / "c.py").symlink_to(tmp_path / "in2" / "c.py")
    with pytest.raises(WriteError):
        write_atomic(tmp_path / "in" / "c.py", b"z\n", within=(tmp_path / "in",))
