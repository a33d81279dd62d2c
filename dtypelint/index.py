"""The project index: facts about every file of a run, for cross-file analysis.

Phase 1 of a run summarises each file (``dtypelint.analysis.summarize``) into
entries keyed by qualified name (``pkg.module.Class``).  Phase 2 analyses each file
against the merged index through an ``IndexView`` that records which entries it
read, so the per-file cache can tell when a dependency changed.  Entries must be
picklable values with a deterministic ``repr`` (frozen dataclasses, tuples, str).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any, Iterable


class ProjectIndex:
    def __init__(self, entries: dict[str, Any] | None = None):
        self.entries: dict[str, Any] = dict(entries or {})
        self._by_short: dict[str, list[str]] = defaultdict(list)
        for key in sorted(self.entries):
            self._by_short[key.rsplit(".", 1)[-1]].append(key)

    @classmethod
    def merge(cls, parts: Iterable[dict[str, Any]]) -> "ProjectIndex":
        entries: dict[str, Any] = {}
        for part in parts:
            entries.update(part)
        return cls(entries)

    def view(self) -> "IndexView":
        return IndexView(self)

    def digest_of(self, deps: dict[str, str]) -> bool:
        """True when every recorded dependency still has the same digest."""
        return all(self._digest(key) == value for key, value in deps.items())

    def _digest(self, key: str) -> str:
        if key.startswith("short:"):
            payload = "|".join(self._by_short.get(key[6:], []))
        elif key.startswith("file:"):
            payload = _file_digest(key[5:])
        else:
            payload = repr(self.entries.get(key))
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


class IndexView:
    """Read access to the index that remembers what was read (for cache validation)."""

    def __init__(self, index: ProjectIndex):
        self._index = index
        self._read: set[str] = set()

    def get(self, key: str) -> Any | None:
        self._read.add(key)
        return self._index.entries.get(key)

    def by_short_name(self, name: str) -> list[str]:
        """Qualified keys whose last component is ``name`` (for unresolved names)."""
        self._read.add("short:" + name)
        return list(self._index._by_short.get(name, ()))

    def note_file(self, path: str) -> None:
        """A file read from disk by the analysis (a helper imported by a file linted alone)."""
        self._read.add("file:" + path)

    def dependencies(self) -> dict[str, str]:
        return {key: self._index._digest(key) for key in sorted(self._read)}


def _file_digest(path: str) -> str:
    if path.startswith("?"):
        return "unresolved"
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "missing"
