"""Real packages to run dtypelint over: unpacked PyPI wheels, never committed.

A package is looked up, in order, in ``$DTYPELINT_CORPUS`` (a folder of unpacked wheels named
``<name>-<version>/``), ``/work/corpus`` and the git-ignored ``corpus/`` folder of this
checkout; when it is in none of them and ``fetch`` is allowed, its wheel is downloaded with
``pip download`` into ``corpus/`` and unpacked there.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

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
