"""`pip install .` (a real wheel, not an editable install) ships everything read at run time."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (whl,) = out.glob("dtypelint-*.whl")
    return whl


def test_wheel_contains_catalog_and_package_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for toml in (REPO / "rules").glob("DTL*.toml"):
        assert f"dtypelint/_catalog/{toml.name}" in names
    tracked = subprocess.run(["git", "ls-files", "dtypelint"], cwd=REPO, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout (sdist): fall back to the tree
        tracked = [p.relative_to(REPO).as_posix() for p in (REPO / "dtypelint").rglob("*") if p.is_file()
                   and "__pycache__" not in p.parts]
    for rel in tracked:
        assert rel in names, f"{rel} is missing from the wheel"
    assert any(n.endswith("entry_points.txt") for n in names)


def test_installed_wheel_runs_from_anywhere(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, timeout=300)
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "dtypelint", "rules", "--output-format", "json"], cwd=tmp_path,
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    import json

    shipped = {r["code"] for r in json.loads(proc.stdout)}
    assert shipped == {p.stem for p in (REPO / "rules").glob("DTL*.toml")}
    code = "import dtypelint.catalog as c; print(c.catalog_dir())"
    where = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env).stdout
    assert where.strip().endswith("dtypelint/_catalog")
    # the HTML report reads its CSS and JS from the installed package
    model = tmp_path / "model.py"
    model.write_text((REPO / "fixtures" / "seed1_bmm_attention_helper.py").read_text())
    proc = subprocess.run([sys.executable, "-m", "dtypelint", "check", "--no-cache", "--output-format", "html", "model.py"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert ".pin.sink" in proc.stdout and "function drawAll()" in proc.stdout
