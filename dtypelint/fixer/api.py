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
    from dtypelint import analysis
    from dtypelint.context import module_name_for
    from dtypelint.engine import CheckTask, check_source, enabled_for

    settings = settings or Settings(root=Path.cwd())
    module_name = module_name_for(path) if path else Path(filename).stem
    relpath = settings.relpath(path) if path else filename
    task = CheckTask(path=path, filename=filename, settings=settings,
                     enabled=enabled_for(settings, relpath), module_name=module_name)
    index = index or ProjectIndex()
    try:
        part = analysis.summarize(text, module_name, filename)
    except Exception:
        part = {}
    if part:
        index = ProjectIndex({**index.entries, **part})

    def lint(src: SourceFile) -> list[Diagnostic]:
        outcome, _ = check_source(src, task, index)
        return outcome.diagnostics

    newline = "\r\n" if "\r\n" in text else ("\r" if "\r" in text and "\n" not in text else "\n")
    source = SourceFile(text=text, newline=newline)
    return fix_text(source, filename, lint, FixOptions(unsafe=unsafe, write=False))
