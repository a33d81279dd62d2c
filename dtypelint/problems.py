"""Could-not-analyse diagnostics (DTL0xx): a file dtypelint could not read, parse, analyse or fix.

Every stage of the pipeline (source, parse, analysis, fixer) reports its problems
through :func:`problem`, so none of them needs the engine that runs it.
"""

from __future__ import annotations

from dtypelint.catalog import load_catalog
from dtypelint.diagnostics import Diagnostic, Position, rule_url


def problem(code: str, filename: str, message: str, row: int = 1, column: int = 1,
            end: Position | None = None) -> Diagnostic:
    """A could-not-analyse (DTL0xx) diagnostic."""
    spec = load_catalog()[code]
    start = Position(row, column)
    return Diagnostic(
        code=code, name=spec.name, message=message, severity=spec.severity, filename=filename,
        start=start, end=end or start, url=rule_url(code, spec.name),
    )
