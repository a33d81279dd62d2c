"""Import the project with some files replaced by fixed copies, under the same module names.

A fixed file is written to a temporary folder and imported, by a meta-path finder,
wherever Python would have imported the original (``pkg.models.attn`` stays
``pkg.models.attn``, relative imports keep working, the rest of the package is the
user's own files, untouched).  Tracebacks and ``inspect`` read the copy.

:func:`apply_fixes` applies the edits of chosen findings to a text (the fixer's edit
engine); :class:`LineMap` maps a line of the fixed copy back to the original.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from dtypelint.diagnostics import Edit, Fix
from dtypelint.edits import apply_edit_groups
from dtypelint.fixer.loop import normalize_newlines, syntax_problem
from dtypelint.source import SourceFile


class FixError(Exception):
    """The fixes cannot be applied together, or the result is not valid Python."""


def apply_fixes(text: str, fixes: list[Fix], filename: str = "<fixed>") -> str:
    """``text`` with every fix applied (all or nothing)."""
    source = SourceFile.from_text(text)
    groups = [tuple(Edit(normalize_newlines(e.content, source.newline), e.start, e.end) for e in f.edits)
              for f in fixes]
    new, applied = apply_edit_groups(source, groups)
    if len(applied) != len(groups):
        raise FixError("the fixes overlap and cannot be applied together")
    problem = syntax_problem(new, filename)
    if problem:
        raise FixError(f"the fixed source is not valid Python: {problem}")
    return new


class LineMap:
    """Map lines of a changed text back to the original (a fix may add lines, e.g. an import)."""

    def __init__(self, original: str, changed: str):
        self._map: dict[int, int] = {}
        matcher = difflib.SequenceMatcher(a=original.splitlines(), b=changed.splitlines(), autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            for j in range(j1, j2):
                self._map[j + 1] = (i1 + (j - j1) + 1) if tag == "equal" else min(i1 + (j - j1), max(i1, i2 - 1)) + 1

    def __call__(self, line: int) -> int:
        return self._map.get(line, line)


@lru_cache(maxsize=None)
def _real(path: str) -> str:
    return os.path.realpath(path)


def _key(path: str | os.PathLike) -> str:
    return _real(os.fspath(path))


class _TextLoader(importlib.abc.Loader):
    def __init__(self, copy: str, text: str):
        self.copy = copy
        self.text = text

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        module.__file__ = self.copy
        code = compile(self.text, self.copy, "exec", dont_inherit=True)
        exec(code, module.__dict__)


class OverlayFinder(importlib.abc.MetaPathFinder):
    """Serve ``patched`` files (original path -> (copy path, text)) in place of the originals."""

    def __init__(self, patched: dict[str, tuple[str, str]]):
        self.patched = {_key(k): v for k, v in patched.items()}

    def find_spec(self, name, path, target=None):
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not spec.origin or not spec.has_location:
            return None
        hit = self.patched.get(_key(spec.origin))
        if hit is None:
            return None
        copy, text = hit
        return importlib.util.spec_from_file_location(
            name, copy, loader=_TextLoader(copy, text),
            submodule_search_locations=spec.submodule_search_locations)


def write_copies(patched_texts: dict[str, str], folder: Path, root: Path) -> dict[str, tuple[str, str]]:
    """Write each fixed text under ``folder`` (keeping its path below ``root``); register it for tracebacks."""
    out = {}
    for original, text in patched_texts.items():
        try:
            rel = Path(original).resolve().relative_to(root.resolve())
        except ValueError:
            rel = Path(Path(original).name)
        copy = folder / rel
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text, encoding="utf-8")
        linecache.cache[str(copy)] = (len(text), None, text.splitlines(True), str(copy))
        out[original] = (str(copy), text)
    return out


def purge(names) -> None:
    """Forget modules so the next import runs them again (from the overlay or the original)."""
    for name in list(names):
        sys.modules.pop(name, None)


@contextmanager
def project_imports(roots: list[Path], patched: dict[str, tuple[str, str]] | None = None):
    """``roots`` first on ``sys.path`` and the overlay first on ``sys.meta_path`` while the block runs."""
    added = [str(r) for r in roots if str(r) not in sys.path]
    for r in reversed(added):
        sys.path.insert(0, r)
    finder = OverlayFinder(patched or {}) if patched else None
    if finder is not None:
        sys.meta_path.insert(0, finder)
    importlib.invalidate_caches()
    try:
        yield
    finally:
        if finder is not None and finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for r in added:
            try:
                sys.path.remove(r)
            except ValueError:
                pass


def modules_from(paths) -> list[str]:
    """Names in ``sys.modules`` whose file is one of ``paths`` (to purge before a re-import)."""
    keys = {_key(p) for p in paths}
    names = {os.path.basename(k) for k in keys}
    out = []
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and os.path.basename(f) in names and _key(f) in keys:
            out.append(name)
    return out
