"""Parsing: CPython's ``ast``, once per file, shared by the project index and the analysis.

CPython's parser is the reference for what is valid Python, so its message and
position are what DTL001 reports.  libcst is not used here: it parses only the
files being fixed (:mod:`dtypelint.fixer`), where its exact round trip matters.
"""

from __future__ import annotations

import ast

from dtypelint.diagnostics import Diagnostic
from dtypelint.problems import problem


class ParseFailure(Exception):
    """The text is not Python that CPython can parse; ``diagnostic`` says why and where."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def parse_module(text: str, filename: str) -> ast.Module:
    """The module's tree; raises :class:`ParseFailure` (DTL001, or DTL005 when nested too deeply)."""
    try:
        return ast.parse(text, filename)
    except SyntaxError as exc:
        message = f"SyntaxError: {exc.msg}"
        raise ParseFailure(problem("DTL001", filename, message, row=max(1, exc.lineno or 1),
                                   column=max(1, exc.offset or 1))) from None
    except (RecursionError, MemoryError) as exc:  # CPython's parser gives up on extreme nesting
        raise ParseFailure(problem("DTL005", filename, "analysis failed: the code is nested too deeply for "
                                   f"Python's parser ({type(exc).__name__})")) from None
    except ValueError as exc:  # e.g. NUL bytes in an in-memory buffer
        raise ParseFailure(problem("DTL001", filename, f"cannot parse: {exc}")) from None
