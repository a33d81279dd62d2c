"""Fixing one file inside the engine's worker (so files are fixed in parallel).

``dtypelint.engine.run_check_task`` calls :func:`fix_outcome` after it has checked
a file whose task carries :class:`FixOptions`.  A file without an applicable fix
costs nothing more.  Otherwise the fix loop re-analyses the file in memory (with
the same project index), and the result is written atomically when allowed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from dtypelint.diagnostics import Diagnostic
from dtypelint.fixer.loop import FixReport, applicable, fix_text
from dtypelint.fixer.write import WriteError, write_atomic
from dtypelint.source import SourceError, SourceFile

if TYPE_CHECKING:  # pragma: no cover
    from dtypelint.engine import CheckTask, FileOutcome
    from dtypelint.index import ProjectIndex


def fix_error(filename: str, message: str) -> Diagnostic:
    from dtypelint.engine import problem

    return problem("DTL006", filename, message)


def fix_outcome(task: "CheckTask", data: bytes, out: "FileOutcome", index: "ProjectIndex") -> "FileOutcome":
    """Apply the allowed fixes of ``out`` to the file (``data`` is what was checked)."""
    from dtypelint.engine import check_source

    options = task.fix
    if out.failed or not applicable(out.diagnostics, options.unsafe):
        return out
    if (task.path or Path(task.filename)).suffix == ".ipynb":  # fix the cells, write them back into the JSON
        from dtypelint.notebooks import fix_notebook

        fixed = fix_notebook(task, data, out, index)
        if fixed is None:
            return out
        return _finish(task, data, out, *fixed)
    try:
        source = SourceFile.from_bytes(data)
    except SourceError:
        return out

    def lint(src: SourceFile) -> list[Diagnostic]:
        outcome, _ = check_source(src, task, index)
        return outcome.diagnostics

    try:
        report, diags = fix_text(source, task.filename, lint, options, initial=out.diagnostics)
    except Exception as exc:  # a bug in the fixer: leave the file untouched, say so, keep going
        report = FixReport(original=source.text, text=source.text,
                           error=f"fixing failed: {type(exc).__name__}: {exc}")
        diags = out.diagnostics
    return _finish(task, data, out, report, diags)


def _finish(task: "CheckTask", data: bytes, out: "FileOutcome", report: FixReport,
            diags: list[Diagnostic]) -> "FileOutcome":
    options = task.fix
    if report.error is None and report.changed and options.write and task.path is not None:
        try:
            roots = options.write_roots or (os.path.dirname(os.path.abspath(task.path)),)
            write_atomic(task.path, report.data or b"", expected=data, within=roots)
            report.written = True
        except WriteError as exc:
            report = FixReport(original=report.original, text=report.original, error=str(exc), passes=report.passes)
            diags = out.diagnostics
    if report.error is not None:
        diags = sorted([*diags, fix_error(task.filename, report.error)], key=Diagnostic.sort_key)
        if "DTL006" not in task.enabled:  # DTL006 ignored: the file stays untouched, silently
            diags = [d for d in diags if d.code != "DTL006"]
    out.diagnostics = diags
    out.fix = report
    return out
