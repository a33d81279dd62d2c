"""Real model code for the benchmarks and the soak: pinned PyPI wheels, unpacked, never committed.

Two layouts, for two kinds of run:

- ``ensure(root, wheels)`` (the speed benchmark): only the source model authors write -- all of
  timm and the ``models`` subtrees of transformers and diffusers -- under ``root/<name>/``, in a
  folder that is made its own git repository so ``.gitignore`` rules of this checkout do not hide it.
- ``package_root(name, version)`` (soak, fix round trip, fuzzing): whole unpacked wheels
  ``<name>-<version>/``, looked up in ``$DTYPELINT_CORPUS``, ``/work/corpus`` and the git-ignored
  ``corpus/`` folder of this checkout, downloaded there when missing.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Package:
    name: str  # the corpus folder's name
    requirement: str  # what pip downloads
    wheel_prefix: str  # the wheel file's name starts with this
    subtree: str  # the folder kept from the wheel

    def folder(self, root: Path) -> Path:
        return root / self.name / self.subtree


PACKAGES = (
    Package("timm", "timm==1.0.31", "timm-1.0.31-", "timm"),
    Package("transformers-models", "transformers==5.23.0", "transformers-5.23.0-", "transformers/models"),
    Package("diffusers-models", "diffusers==0.42.1", "diffusers-0.42.1-", "diffusers/models"),
)


def _wheel(pkg: Package, wheels: list[Path], cache: Path) -> Path:
    for folder in [*wheels, cache]:
        found = sorted(folder.glob(pkg.wheel_prefix + "*.whl")) if folder.is_dir() else []
        if found:
            return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    print(f"downloading {pkg.requirement} ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                    pkg.requirement, "-d", str(cache)], check=True)
    found = sorted(cache.glob(pkg.wheel_prefix + "*.whl"))
    if not found:
        sys.exit(f"pip did not produce a wheel for {pkg.requirement}")
    return found[0]


def _own_repository(root: Path) -> None:
    """Make ``root`` a git repository of its own.

    The corpus lives in a folder the project's ``.gitignore`` ignores (it is never committed), and
    dtypelint and ruff both honour ``.gitignore``: inside the project they would skip every file.  A
    ``.git`` folder is where they stop looking for ignore files upward."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / ".git").exists():
        if subprocess.run(["git", "init", "-q", str(root)], capture_output=True).returncode != 0:
            (root / ".git").mkdir(exist_ok=True)


def ensure(root: Path, wheels: list[Path]) -> dict[str, Path]:
    """Unpack each package's subtree under ``root`` (once); returns name -> source folder."""
    _own_repository(root)
    out = {}
    for pkg in PACKAGES:
        target = pkg.folder(root)
        if not target.is_dir():
            whl = _wheel(pkg, wheels, root / "wheels")
            staging = root / (pkg.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            with zipfile.ZipFile(whl) as zf:
                members = [m for m in zf.namelist() if m.startswith(pkg.subtree + "/") and m.endswith(".py")]
                zf.extractall(staging, members)
            shutil.rmtree(root / pkg.name, ignore_errors=True)
            os.replace(staging, root / pkg.name)
        out[pkg.name] = target
    return out


def scaled(root: Path, source: Path, times: int) -> Path:
    """``times`` copies of ``source`` (hard links: same files, no extra disk) under one folder."""
    target = root / "scaled" / f"{source.name}-x{times}"
    if times == 1:
        return source
    if not target.is_dir():
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        for i in range(times):
            shutil.copytree(source, staging / f"copy{i}" / source.name, copy_function=os.link)
        os.replace(staging, target)
    return target


def count(paths: list[Path]) -> tuple[int, int]:
    """(files, lines) of the ``.py`` files under ``paths``."""
    files = lines = 0
    for root in paths:
        for p in root.rglob("*.py"):
            files += 1
            lines += p.read_bytes().count(b"\n")
    return files, lines


# -- whole wheels (soak, fix round trip, fuzzing) --------------------------------------------------

REPO = Path(__file__).resolve().parent.parent
LOCAL = REPO / "corpus"
DEFAULT_PACKAGES = {"transformers": "5.23.0", "timm": "1.0.31", "diffusers": "0.42.1"}


def search_roots() -> list[Path]:
    roots = [Path(p) for p in (os.environ.get("DTYPELINT_CORPUS"), "/work/corpus") if p]
    return [*roots, LOCAL]


def package_root(name: str, version: str, fetch: bool = True) -> Path | None:
    """The folder holding the unpacked wheel (``<root>/<name>-<version>``), or None."""
    for root in search_roots():
        folder = root / f"{name}-{version}"
        if (folder / name).is_dir():
            return folder
    if not fetch:
        return None
    folder = LOCAL / f"{name}-{version}"
    with tempfile.TemporaryDirectory() as wheels:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", f"{name}=={version}",
                               "-d", wheels], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"cannot download {name}=={version}: {proc.stderr.strip()[-300:]}", file=sys.stderr)
            return None
        for whl in Path(wheels).glob("*.whl"):
            zipfile.ZipFile(whl).extractall(folder)
    return folder if (folder / name).is_dir() else None


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def frozen_source() -> Path:
    """A copy of this checkout's ``dtypelint/`` and ``rules/`` to put on PYTHONPATH.

    A long run must use one version of the code: edits made in the checkout while it runs would
    also change the cache's build fingerprint (turning a warm run cold).
    """
    folder = Path(tempfile.mkdtemp(prefix="dtypelint-src-"))
    atexit.register(shutil.rmtree, folder, True)
    shutil.copytree(REPO / "dtypelint", folder / "dtypelint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "rules", folder / "rules")
    return folder
