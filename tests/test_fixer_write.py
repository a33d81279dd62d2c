"""Atomic writes: failures leave the original intact and no temporary file behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dtypelint.fixer.write import TMP_SUFFIX, WriteError, clean_stale_temporaries, write_atomic


def test_write_keeps_mode(tmp_path):
    f = tmp_path / "m.py"
    f.write_bytes(b"old\n")
    os.chmod(f, 0o640)
    write_atomic(f, b"new\n")
    assert f.read_bytes() == b"new\n" and stat.S_IMODE(f.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["m.py"]


def test_replace_failure_keeps_original(tmp_path, monkeypatch):
    f = tmp_path / "m.py"
    f.write_bytes(b"old\n")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(WriteError, match="No space left"):
        write_atomic(f, b"new\n")
    assert f.read_bytes() == b"old\n" and os.listdir(tmp_path) == ["m.py"]


def test_interrupt_during_write_keeps_original(tmp_path, monkeypatch):
    f = tmp_path / "m.py"
    f.write_bytes(b"old\n")
    real_fsync = os.fsync

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(f, b"new\n")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert f.read_bytes() == b"old\n" and os.listdir(tmp_path) == ["m.py"]


def test_changed_on_disk_is_not_overwritten(tmp_path):
    f = tmp_path / "m.py"
    f.write_bytes(b"edited by the user\n")
    with pytest.raises(WriteError, match="changed on disk"):
        write_atomic(f, b"new\n", expected=b"old\n")
    assert f.read_bytes() == b"edited by the user\n"


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    dead = tmp_path / f".m.py.999999999.abc{TMP_SUFFIX}"
    alive = tmp_path / f".m.py.{os.getpid()}.abc{TMP_SUFFIX}"
    other = tmp_path / ".m.py.123.notours"
    for p in (dead, alive, other):
        p.write_text("x")
    removed = clean_stale_temporaries(tmp_path)
    assert removed == [dead] and alive.exists() and other.exists()


def test_fix_with_failing_replace_reports_dtl006(tmp_path, monkeypatch):
    """In process, through the engine: the write fails -> file untouched, DTL006, findings still reported."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    import fakerules

    fakerules.install(("DTL901",))
    try:
        _run_failing_replace(tmp_path, monkeypatch)
    finally:
        fakerules.uninstall()


def _run_failing_replace(tmp_path, monkeypatch):
    from dtypelint.config import Settings
    from dtypelint.engine import RunOptions, build_tasks, run
    from dtypelint.fixer import FixOptions
    from dtypelint.fixer.run import FileFixer

    f = tmp_path / "m.py"
    f.write_bytes(b"import torch\nx = -1e9\n")
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(PermissionError(13, "Permission denied")))
    tasks = build_tasks([(f, Settings(root=tmp_path))])
    tasks = [t.__class__(**{**t.__dict__, "fix": FileFixer(FixOptions())}) for t in tasks]
    result = run(tasks, RunOptions(in_process=True))
    codes = [d.code for d in result.diagnostics]
    assert f.read_bytes() == b"import torch\nx = -1e9\n"
    assert "DTL006" in codes and "DTL901" in codes
    assert os.listdir(tmp_path) == ["m.py"]
