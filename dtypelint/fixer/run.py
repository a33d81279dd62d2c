"""The fix step the engine's worker calls after checking a file (so files are fixed in parallel).

``dtypelint check --fix`` puts a :class:`FileFixer` on each task; the engine calls it
with the file's source view (:class:`dtypelint.source.SourceView`: a ``.py`` file, or a
notebook's cells as code) and a ``lint`` function, and never imports the fixer.  A file
without an applicable fix costs nothing more.  Otherwise the fix loop re-analyses the
code in memory (with the same project index), the view turns the fixed code into the
file's bytes (a notebook: only the changed cells' ``source``), and the result is
written atomically when allowed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from dtypelint.diagnostics import Diagnostic
from dtypelint.fixer.loop import FixOptions, FixReport, applicable, fix_text
from dtypelint.fixer.write import WriteError, write_atomic
from dtypelint.problems import problem
from dtypelint.source import SourceError, SourceFile, SourceView

if TYPE_CHECKING:  # pragma: no cover
    from dtypelint.engine import CheckTask, FileOutcome


def fix_error(filename: str, message: str) -> Diagnostic:
    return problem("DTL006", filename, message)


@dataclass(frozen=True)
class FileFixer:
    """The engine's fix step for ``--fix`` / ``--unsafe-fixes`` / ``--diff`` (picklable: it travels to workers)."""

    options: FixOptions = FixOptions()

    def __call__(self, task: "CheckTask", data: bytes, view: SourceView, out: "FileOutcome",
                 lint: Callable[[SourceFile], list[Diagnostic]]) -> "FileOutcome":
        return fix_outcome(task, data, view, out, lint, self.options)


def fix_outcome(task: "CheckTask", data: bytes, view: SourceView, out: "FileOutcome",
                lint: Callable[[SourceFile], list[Diagnostic]], options: FixOptions) -> "FileOutcome":
    """Apply the allowed fixes of ``out`` to the file (``data`` is what was checked)."""
    if out.failed or not applicable(out.diagnostics, options.unsafe):
        return out
    code = view.code
    initial = [view.to_code(d) for d in out.diagnostics]
    try:
        report, diags = fix_text(code, task.filename, lint, options, initial=initial)
    except Exception as exc:  # a bug in the fixer: leave the file untouched, say so, keep going
        report = FixReport(original=code.text, text=code.text, error=f"fixing failed: {type(exc).__name__}: {exc}")
        diags = initial
    after = view
    if report.error is None and report.changed:
        try:
            report.data, after = view.encode(report.text)
        except SourceError as exc:
            report = FixReport(original=report.original, text=report.original, passes=report.passes, error=exc.message)
            diags = initial
    diags = [after.to_file(d) for d in diags]
    report.original = view.display(report.original)
    report.text = view.display(report.text) if report.changed else report.original
    return _finish(task, data, out, report, diags, options)


def _finish(task: "CheckTask", data: bytes, out: "FileOutcome", report: FixReport,
            diags: list[Diagnostic], options: FixOptions) -> "FileOutcome":
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
