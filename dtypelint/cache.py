"""On-disk result cache, one small pickle file per (file content, config, tool version).

Summaries (phase 1) are keyed on content alone; diagnostics (phase 2) also on the
effective settings, and each entry records the digests of the project-index
entries the analysis read, so a change in an imported base class invalidates the
files that depend on it and nothing else.  A corrupt or unwritable cache is never
an error: it is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path
from typing import Any

from dtypelint import __version__

CACHE_DIR_NAME = ".dtypelint_cache"


def default_cache_dir() -> Path:
    env = os.environ.get("DTYPELINT_CACHE_DIR")
    return Path(env) if env else Path.cwd() / CACHE_DIR_NAME


def content_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Cache:
    def __init__(self, root: Path, enabled: bool = True):
        self.root = root
        self.enabled = enabled
        self._dir = root / __version__

    def _path(self, kind: str, key: str) -> Path:
        return self._dir / kind / key[:2] / f"{key}.pickle"

    def get(self, kind: str, key: str) -> Any | None:
        if not self.enabled:
            return None
        try:
            with open(self._path(kind, key), "rb") as fh:
                return pickle.load(fh)
        except Exception:  # missing, truncated or from an incompatible build: a miss
            return None

    def put(self, kind: str, key: str, value: Any) -> None:
        if not self.enabled:
            return
        import tempfile  # not needed by runs that only read the cache (start-up time)

        path = self._path(kind, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._ensure_gitignore()
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            pass

    def _ensure_gitignore(self) -> None:
        marker = self.root / ".gitignore"
        if not marker.exists():
            try:
                marker.write_text("# Automatically created by dtypelint.\n*\n")
                (self.root / "CACHEDIR.TAG").write_text(
                    "Signature: 8a477f597d28d172789f06886806bc55\n# dtypelint cache\n"
                )
            except OSError:
                pass


def check_key(content: str, settings_fingerprint: str, enabled: frozenset[str], display: str) -> str:
    payload = json.dumps([content, settings_fingerprint, sorted(enabled), display])
    return hashlib.sha256(payload.encode()).hexdigest()


def clean(root: Path) -> bool:
    """Remove a cache folder; True if something was removed."""
    import shutil

    if root.is_dir() and ((root / "CACHEDIR.TAG").exists() or root.name == CACHE_DIR_NAME):
        shutil.rmtree(root, ignore_errors=True)
        return True
    return False
