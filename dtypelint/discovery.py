"""Finding the files to lint: walk folders, honour .gitignore and exclude globs.

Hidden folders, virtualenvs (any folder holding ``pyvenv.cfg``) and caches are
skipped.  A file passed explicitly is linted unless an ``exclude`` glob matches it.
Unreadable paths do not stop the walk: they are returned as problems.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dtypelint.config import ConfigResolver, Settings

if TYPE_CHECKING:  # pragma: no cover
    import pathspec

SOURCE_SUFFIXES = (".py", ".ipynb")


@dataclass
class Discovered:
    files: list[tuple[Path, Settings]] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)  # unreadable paths


def _git_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _load_ignore(folder: Path) -> pathspec.PathSpec | None:
    gi = folder / ".gitignore"
    try:
        if gi.is_file():
            import pathspec  # only when there is a .gitignore to read: files named on the command line never need it

            return pathspec.GitIgnoreSpec.from_lines(gi.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None
    return None


class _Ignores:
    """Stack of .gitignore specs from the git root down to a folder."""

    def __init__(self) -> None:
        self._cache: dict[Path, list[tuple[Path, pathspec.PathSpec]]] = {}

    def specs_for(self, folder: Path) -> list[tuple[Path, pathspec.PathSpec]]:
        if folder in self._cache:
            return self._cache[folder]
        root = _git_root(folder)
        chain: list[tuple[Path, pathspec.PathSpec]] = []
        if root is not None and folder != root and root in folder.parents:
            chain = list(self.specs_for(folder.parent))
        spec = _load_ignore(folder)
        if spec is not None:
            chain = chain + [(folder, spec)]
        self._cache[folder] = chain
        return chain

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for base, spec in self.specs_for(path.parent):
            rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
        return False


def _is_venv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file()


def _real(path: Path) -> Path:
    """The path with symlinks resolved; never raises (a symlink loop stays as it is)."""
    return Path(os.path.realpath(path))


def _link_problem(path: Path) -> str | None:
    """Why a symbolic link cannot be followed, or None when it leads to something."""
    try:
        os.stat(path)
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop (following the links never reaches a file)"
        if exc.errno == errno.ENOENT:
            return "broken symbolic link"
        return exc.strerror or str(exc)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def discover(paths: list[Path], resolver: ConfigResolver) -> Discovered:
    out = Discovered()
    ignores = _Ignores()
    seen: set[Path] = set()
    walked: set[tuple[int, int]] = set()  # folders already walked (by device and inode)

    def add(path: Path, settings: Settings) -> None:
        key = _real(path)
        if key not in seen:
            seen.add(key)
            out.files.append((path, settings))

    def walk(folder: Path, ancestors: tuple[tuple[int, int], ...]) -> None:
        ident = _identity(folder)
        if ident is not None:
            if ident in ancestors:  # a symlinked folder leading back up: linted once, by its real path
                out.problems.append((folder, "symbolic link loop (the folder leads back to an enclosing "
                                             "folder); not followed"))
                return
            if ident in walked:  # the same folder reached through another link: already linted
                return
            walked.add(ident)
            ancestors = ancestors + (ident,)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            out.problems.append((folder, exc.strerror or str(exc)))
            return
        settings = resolver.for_path(folder)
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
            except OSError as exc:
                if path.suffix in SOURCE_SUFFIXES or entry.is_symlink():
                    out.problems.append((path, _link_problem(path) or exc.strerror or str(exc)))
                continue
            if is_dir:
                if entry.name.startswith(".") or _is_venv(path) or settings.is_excluded(path):
                    continue
                if settings.respect_gitignore and ignores.ignored(_real(path), True):
                    continue
                walk(path, ancestors)
            elif not is_file and path.suffix in SOURCE_SUFFIXES and entry.is_symlink():
                out.problems.append((path, _link_problem(path) or "broken symbolic link"))
            elif is_file and path.suffix in SOURCE_SUFFIXES:
                file_settings = resolver.for_path(path)
                if file_settings.is_excluded(path):
                    continue
                if file_settings.respect_gitignore and ignores.ignored(_real(path), False):
                    continue
                add(path, file_settings)

    for given in paths:
        if given.is_dir():
            settings = resolver.for_path(given)
            if _real(given) != _real(Path.cwd()) and settings.is_excluded(given):
                continue
            above = tuple(i for i in map(_identity, _real(given).parents) if i is not None)
            walk(given, above)  # a link back to a folder above the given one is a loop too
        elif given.is_symlink() and not given.exists():
            out.problems.append((given, _link_problem(given) or "broken symbolic link"))
        elif given.exists() and not given.is_file():  # reading a FIFO or a device would block or never end
            out.problems.append((given, "not a regular file"))
        elif given.exists():
            settings = resolver.for_path(given)
            if settings.is_excluded(given):
                continue
            add(given, settings)
        else:
            out.problems.append((given, "No such file or directory"))
    return out
