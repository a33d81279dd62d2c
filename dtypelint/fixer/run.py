"""Fixing one file inside the engine's worker (so files are fixed in parallel).

``dtypelint.engine.run_check_task`` calls :func:`fix_outcome` after it has checked
a file whose task carries :class:`FixOptions`.  A file without an applicable fix
costs nothing more.  Otherwise the fix loop re-analyses the file in memory (with
the same project index), and the result is written atomically when allowed.
"""

from __future__ import annotations

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
    notebook = (task.path or Path(task.filename)).suffix == ".ipynb"
    nb = None
    try:
        if notebook:
            from dtypelint.notebooks import NotebookError, NotebookSource

            try:
                nb = NotebookSource.from_bytes(data)
            except NotebookError:
                return out
            source = SourceFile(text=nb.text)  # the code cells as one module (what the analysis saw)
            initial = [nb.to_virtual(d) for d in out.diagnostics]
        else:
            source = SourceFile.from_bytes(data)
            initial = out.diagnostics
    except SourceError:
        return out

    def lint(src: SourceFile) -> list[Diagnostic]:
        outcome, _ = check_source(src, task, index)
        return outcome.diagnostics

    try:
        report, diags = fix_text(source, task.filename, lint, options, initial=initial)
        if nb is not None:
            report, diags = _back_into_notebook(task, data, report, diags, nb, out, index)
    except Exception as exc:  # a bug in the fixer: leave the file untouched, say so, keep going
        report = FixReport(original=source.text, text=source.text,
                           error=f"fixing failed: {type(exc).__name__}: {exc}")
        diags = out.diagnostics
    if report.error is None and report.changed and options.write and task.path is not None:
        try:
            write_atomic(task.path, report.data or b"", expected=data)
            report.written = True
        except WriteError as exc:
            report = FixReport(original=report.original, text=report.original, error=str(exc), passes=report.passes)
            diags = out.diagnostics
    if report.error is not None:
        if notebook:
            diags = out.diagnostics  # the findings of the untouched notebook, by cell
        diags = sorted([*diags, fix_error(task.filename, report.error)], key=Diagnostic.sort_key)
        if "DTL006" not in task.enabled:  # DTL006 ignored: the file stays untouched, silently
            diags = [d for d in diags if d.code != "DTL006"]
    out.diagnostics = diags
    out.fix = report
    return out


def _back_into_notebook(task, data: bytes, report: FixReport, diags, nb, out, index):
    """Write the fixed module back into the notebook's cells; report on the notebook's JSON text."""
    from dtypelint.notebooks import NotebookError, check_notebook, notebook_apply_fixed_source

    if report.error is not None:
        return report, out.diagnostics
    if not report.changed:
        return report, [nb.to_cells(d) for d in diags]
    try:
        new_bytes = notebook_apply_fixed_source(data, report.text)
    except NotebookError as exc:
        return FixReport(original=report.original, text=report.original,
                         error=f"the fixed cells cannot be written back into the notebook: {exc}"), out.diagnostics
    as_text = lambda b: b.decode("utf-8-sig", errors="replace")  # noqa: E731
    fixed = FixReport(original=as_text(data), text=as_text(new_bytes), fixed=[nb.to_cells(d) for d in report.fixed],
                      passes=report.passes, data=new_bytes)
    outcome, _ = check_notebook(new_bytes, task, index)  # the remaining findings, by cell of the fixed notebook
    return fixed, outcome.diagnostics
