"""On-disk result cache: one small JSON file per (file content, config, tool build).

Summaries (phase 1) are keyed on content alone; diagnostics (phase 2) also on the
effective settings, and each entry records the digests of the project-index
entries the analysis read, so a change in an imported base class invalidates the
files that depend on it and nothing else.

The cache folder is untrusted input (a CI cache restored from another branch, a
shared checkout): entries are data (``dtypelint.cache_codec``, never pickle), and an
entry is used only if it is a regular file of sane size whose envelope names this
format, this dtypelint build, its own kind and key, and whose value has the shape
its kind expects.  Anything else -- corrupt, truncated, from another version, moved,
wrong-shaped -- is a miss and is rebuilt.  Entries are written to a temporary file
and renamed into place, so concurrent runs sharing a folder never see half an entry.
A corrupt or unwritable cache is never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

from dtypelint import __version__
from dtypelint.cache_codec import CodecError, dumps, loads

CACHE_DIR_NAME = ".dtypelint_cache"
FORMAT_VERSION = 2  # 1 was pickle
MAX_ENTRY_BYTES = 64 * 1024 * 1024
_MAGIC = "dtypelint-cache"


def default_cache_dir() -> Path:
    env = os.environ.get("DTYPELINT_CACHE_DIR")
    return Path(env) if env else Path.cwd() / CACHE_DIR_NAME


def content_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_fingerprint() -> str:
    """The dtypelint version plus a digest of its source files' names, sizes and mtimes.

    A release has a fixed version; a development checkout changes its code without
    changing the version, and results computed by other code must not be reused.
    """
    from dtypelint.catalog import catalog_dir

    h = hashlib.sha256(__version__.encode())
    for folder in (Path(__file__).resolve().parent, catalog_dir()):
        try:
            files = sorted(f for f in folder.rglob("*") if f.suffix in (".py", ".toml"))
        except OSError:
            continue
        for f in files:
            try:
                st = f.stat()
            except OSError:
                continue
            h.update(f"{f.relative_to(folder).as_posix()}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _is_str_map(v: Any) -> bool:
    return type(v) is dict and all(type(k) is str and type(x) is str for k, x in v.items())


def _valid_check_entry(v: Any) -> bool:
    """The engine's phase-2 entry: deps, flags and the diagnostics as JSON objects."""
    from dtypelint.diagnostics import Diagnostic

    if type(v) is not dict or set(v) != {"deps", "parsed", "failed", "diagnostics"}:
        return False
    if not _is_str_map(v["deps"]) or type(v["parsed"]) is not bool or type(v["failed"]) is not bool:
        return False
    if type(v["diagnostics"]) is not list:
        return False
    try:
        for d in v["diagnostics"]:
            Diagnostic.from_json(d)
    except Exception:
        return False
    return True


def _valid_summary_entry(v: Any) -> bool:
    """Phase-1 project-index entries: qualified name -> fact."""
    return type(v) is dict and all(type(k) is str for k in v)


SHAPES: dict[str, Callable[[Any], bool]] = {"check": _valid_check_entry, "summary": _valid_summary_entry}


class Cache:
    def __init__(self, root: Path, enabled: bool = True):
        self.root = root
        self.enabled = enabled
        self.build = build_fingerprint() if enabled else ""
        self._dir = root / f"{__version__}-f{FORMAT_VERSION}-{self.build}"
        self._marked = False

    def _path(self, kind: str, key: str) -> Path:
        return self._dir / kind / key[:2] / f"{key}.json"

    def get(self, kind: str, key: str) -> Any | None:
        """The stored value, or None when missing or not trustworthy."""
        if not self.enabled:
            return None
        data = _read_regular_file(self._path(kind, key))
        if data is None:
            return None
        try:
            head, _, payload = data.partition(b"\n")
            envelope = json.loads(head)
            expected = {"magic": _MAGIC, "format": FORMAT_VERSION, "version": __version__,
                        "build": self.build, "kind": kind, "key": key}
            if envelope != expected:
                return None
            value = loads(payload)
        except (ValueError, CodecError, RecursionError, MemoryError):
            return None
        shape = SHAPES.get(kind)
        if shape is not None and not shape(value):
            return None
        return value

    def put(self, kind: str, key: str, value: Any) -> None:
        if not self.enabled:
            return
        try:
            payload = dumps(value)
        except CodecError:
            return  # a value outside the data model is simply not cached
        envelope = json.dumps({"magic": _MAGIC, "format": FORMAT_VERSION, "version": __version__,
                               "build": self.build, "kind": kind, "key": key}, sort_keys=True)
        path = self._path(kind, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._ensure_markers()
            _write_atomic(path, envelope.encode() + b"\n" + payload)
        except OSError:
            pass

    def _ensure_markers(self) -> None:
        """A .gitignore (the cache is never committed) and a CACHEDIR.TAG (backup tools skip it)."""
        if self._marked:
            return
        self._marked = True
        for name, text in ((".gitignore", "# Automatically created by dtypelint.\n*\n"),
                           ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# dtypelint cache\n")):
            marker = self.root / name
            if not marker.exists():
                try:
                    _write_atomic(marker, text.encode())
                except OSError:
                    pass


def _read_regular_file(path: Path) -> bytes | None:
    """The content of a regular file of sane size; None for anything else (no symlinks, FIFOs, devices)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    """Write a temporary file next to ``path`` and rename it into place (readers see all or nothing)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
