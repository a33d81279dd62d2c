"""In-memory fixing for editors and tools (LSP "fix all", notebooks front-ends, tests)."""

from __future__ import annotations

from pathlib import Path

from dtypelint.config import Settings
from dtypelint.diagnostics import Diagnostic
from dtypelint.fixer.loop import FixOptions, FixReport, fix_text
from dtypelint.index import ProjectIndex
from dtypelint.source import SourceFile


def fix_source(text: str, filename: str = "<stdin>", settings: Settings | None = None, unsafe: bool = False,
               index: ProjectIndex | None = None, path: Path | None = None) -> tuple[FixReport, list[Diagnostic]]:
    """Fix a source text in this process, like ``check --fix`` does for a file (nothing is written).

    Returns the report (``report.text`` is the fixed text; ``report.error`` says why it was
    left untouched, if it was) and the diagnostics of the final text.
    """
    from dtypelint.engine import buffer_task, check_source
    from dtypelint.parse import ParseFailure, parse_module

    try:
        tree = parse_module(text, filename)  # parsed once for the index and the first analysis
    except ParseFailure:
        tree = None
    task, index = buffer_task(text, filename, settings, index, path, tree)

    def lint(src: SourceFile) -> list[Diagnostic]:
        outcome, _ = check_source(src, task, index, tree if src.text == text else None)
        return outcome.diagnostics

    return fix_text(SourceFile.from_text(text), filename, lint, FixOptions(unsafe=unsafe, write=False))
