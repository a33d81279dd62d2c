"""The other modules of the project, for the file being analysed.

When a whole folder is linted, the run's index holds every module's source (phase 1).
pre-commit and editors lint one or a few files: then an imported helper, kernel or
base class is found on disk, the way Python would import it — from the package root
the file belongs to (walking up its ``__init__.py`` folders), the file's own folder,
and the configured source roots (``src``).  What is read is bounded (files and bytes)
and recorded as a dependency of the file's cached result, so editing the helper
re-analyses its users.  Foreign modules are parsed once per process.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

MAX_FOREIGN_FILES = 48  # modules read from disk for one analysed file
MAX_FILE_BYTES = 3_000_000
_CACHE_SIZE = 64


@dataclass(frozen=True)
class ModuleEntry:
    """One module of the project in the run's index (the source is not part of its digest)."""

    module_name: str
    filename: str
    source_key: str
    is_package: bool = False
    source: str = field(default="", repr=False, compare=False)


def source_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def module_entry(text: str, module_name: str, filename: str) -> ModuleEntry:
    return ModuleEntry(module_name, filename, source_key(text), filename.endswith("__init__.py"), text)


# parsed foreign modules, shared by every file analysed in this process
_FOREIGN: "OrderedDict[tuple, object]" = OrderedDict()
# syntax trees by source hash: a module analysed in this process is not parsed again when another file
# imports it (bounded: a tree takes tens of times its text in memory)
_TREES: "OrderedDict[str, ast.Module | None]" = OrderedDict()
_TREE_CACHE = 64


CACHE_BUDGET_BYTES = 256 * 1024 * 1024  # resident size above which a long run drops the caches below


def resident_bytes() -> int | None:
    """This process's resident memory (Linux ``/proc``; None elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def trim_caches(budget: int = CACHE_BUDGET_BYTES) -> bool:
    """Drop the other modules' trees and analyses when the process has grown past ``budget``.

    A worker that lints thousands of files would otherwise keep up to 64 analysed modules (transformers'
    ``modeling_utils`` alone is tens of MB as trees) plus the allocator's fragments of every file it saw.
    Returns whether it dropped them.
    """
    rss = resident_bytes()
    if rss is None or rss <= budget:
        return False
    _FOREIGN.clear()
    _TREES.clear()
    import gc

    gc.collect()
    try:  # hand freed pages back to the system (glibc); harmless where it does not exist
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    return True


def foreign_keys() -> frozenset:
    """Which modules this process holds analysed (a long-lived caller warms itself with the ones it lacks)."""
    return frozenset(_FOREIGN)


def parsed(text: str, key: str | None = None, tree: ast.Module | None = None) -> ast.Module | None:
    """The syntax tree of a module's source, parsed once per process (``tree`` registers one)."""
    key = key or source_key(text)
    if tree is None and key in _TREES:
        _TREES.move_to_end(key)
        return _TREES[key]
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
    _TREES[key] = tree
    while len(_TREES) > _TREE_CACHE:
        _TREES.popitem(last=False)
    return tree


class Project:
    """Module lookup for one analysed file: the run's index first, then the disk."""

    def __init__(self, index, settings, path: Path | None, module_name: str):
        self.index = index
        self.settings = settings
        self.roots = search_roots(path, module_name, settings)
        self.read = 0
        self._entries: dict[str, ModuleEntry | None] = {}

    def entry(self, module_name: str) -> ModuleEntry | None:
        if not module_name:
            return None
        if module_name in self._entries:
            return self._entries[module_name]
        e = None
        if self.index is not None:
            e = self.index.get("module:" + module_name)
            if not isinstance(e, ModuleEntry):
                e = None
        if e is None:
            e = self._from_disk(module_name)
        self._entries[module_name] = e
        return e

    def _from_disk(self, module_name: str) -> ModuleEntry | None:
        if self.read >= MAX_FOREIGN_FILES:
            return None
        path = find_module_file(module_name, self.roots)
        if self.index is not None and hasattr(self.index, "note_file"):
            self.index.note_file(str(path) if path else f"?{module_name}:{'|'.join(map(str, self.roots))}")
        if path is None:
            return None
        self.read += 1
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                return None
            data = path.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        return module_entry(text, module_name, str(path))

    def module(self, module_name: str, settings_key: tuple, build):
        """The FileAnalysis of ``module_name`` (``build(entry, tree)`` makes one), or None."""
        e = self.entry(module_name)
        if e is None:
            return None
        key = (e.filename, e.source_key, settings_key)
        fa = _FOREIGN.get(key)
        if fa is not None:
            _FOREIGN.move_to_end(key)
            return fa
        tree = parsed(e.source, e.source_key)
        fa = build(e, tree) if tree is not None else None
        _FOREIGN[key] = fa
        while len(_FOREIGN) > _CACHE_SIZE:
            _FOREIGN.popitem(last=False)
        return fa


def search_roots(path: Path | None, module_name: str, settings) -> list[Path]:
    roots: list[Path] = []
    if path is not None:
        p = Path(path).absolute()
        depth = len(module_name.split(".")) if module_name else 1
        if p.name == "__init__.py":
            depth += 1
        parents = p.parents
        if depth - 1 < len(parents):
            roots.append(parents[depth - 1])
        roots.append(p.parent)
    for r in getattr(settings, "src", ()) or ():
        roots.append(Path(r).absolute())
    root = getattr(settings, "root", None)
    if root is not None:
        roots.extend([Path(root).absolute(), Path(root).absolute() / "src"])
    out: list[Path] = []
    for r in roots:
        if r not in out:
            out.append(r)
    return out


def find_module_file(module_name: str, roots: list[Path]) -> Path | None:
    parts = module_name.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for root in roots:
        base = root.joinpath(*parts)
        for candidate in (base.with_name(base.name + ".py"), base / "__init__.py"):
            try:
                if candidate.is_file():
                    return candidate
            except OSError:
                continue
    return None
