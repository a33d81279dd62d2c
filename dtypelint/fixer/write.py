"""Atomic file replacement for ``--fix``.

The new content is written to a temporary file in the same folder (same file
system), flushed and fsync'ed, given the original file's permission bits, then
renamed over the original with ``os.replace`` (atomic on POSIX and Windows).  A
crash or kill at any point leaves either the complete original or the complete
new file; never a truncated one.  The temporary file is removed on any error,
and a temporary file left behind by a killed run (SIGKILL cannot be caught) is
removed by the next run that writes next to it, once its process is gone.

Symbolic links are followed (the file they point to is replaced, the link stays) only
when ``within`` allows it: ``--fix`` passes the linted paths, so a link (or a linked
folder) leading outside them is never written through.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from pathlib import Path

TMP_SUFFIX = ".dtypelint.tmp"
_TMP_RE = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.[A-Za-z0-9_]+" + re.escape(TMP_SUFFIX) + "$")


class WriteError(Exception):
    """The fixed content could not be written; the original file is unchanged."""


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


def clean_stale_temporaries(folder: Path, name: str | None = None) -> list[Path]:
    """Remove temporary files of dead dtypelint processes in ``folder`` (for ``name`` only if given)."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _TMP_RE.match(entry.name)
        if not m or (name is not None and m.group("name") != name):
            continue
        if _pid_alive(int(m.group("pid"))):
            continue
        try:
            os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            pass
    return removed


def is_within(path: str | Path, root: str | Path) -> bool:
    """True when ``path`` is ``root`` or below it (both already free of symlinks)."""
    try:
        return os.path.commonpath([os.fspath(path), os.fspath(root)]) == os.fspath(root)
    except ValueError:  # different drives, or a mix of absolute and relative paths
        return False


def write_atomic(path: Path, data: bytes, expected: bytes | None = None, create: bool = False,
                 within: tuple[str | Path, ...] | None = None) -> None:
    """Replace ``path``'s content with ``data`` atomically, keeping its permission bits.

    When ``expected`` is given and the file's current content differs (someone edited
    it while dtypelint was fixing it), nothing is written and :class:`WriteError` is raised.
    With ``create``, a missing file is created (mode from the umask, like ``open``).
    With ``within`` (folders), the file's real location (symlinks resolved) must lie
    below one of them; a symlink leading elsewhere raises :class:`WriteError`.
    """
    target = Path(os.path.realpath(path))
    folder = target.parent
    if within is not None and not any(is_within(target, os.path.realpath(root)) for root in within):
        raise WriteError(f"{path} leads (through a symbolic link) to {target}, outside the linted paths; "
                         "dtypelint does not write through it")
    try:
        st = os.stat(target)
        mode, owner = stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)
    except FileNotFoundError:
        if not create:
            raise WriteError(f"cannot stat {path}: No such file or directory") from None
        umask = os.umask(0)
        os.umask(umask)
        mode, owner = 0o666 & ~umask, None
    except OSError as exc:
        raise WriteError(f"cannot stat {path}: {exc.strerror or exc}") from exc
    if expected is not None:
        try:
            current = target.read_bytes()
        except OSError as exc:
            raise WriteError(f"cannot re-read {path}: {exc.strerror or exc}") from exc
        if current != expected:
            raise WriteError(f"{path} changed on disk while it was being fixed; left as it is")
    clean_stale_temporaries(folder, target.name)
    prefix = f".{target.name}.{os.getpid()}."
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=TMP_SUFFIX, dir=folder)
    except OSError as exc:
        raise WriteError(f"cannot create a temporary file next to {path}: {exc.strerror or exc}") from exc
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            if owner is not None and hasattr(os, "chown"):
                try:
                    os.chown(tmp, *owner)
                except OSError:
                    pass  # not permitted (not the owner): the new file keeps our ownership
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from exc
    _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable (best effort; not available on every platform)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.EACCES):
            pass
    finally:
        os.close(fd)
