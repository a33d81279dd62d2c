"""Autofix: ``dtypelint check --fix`` / ``--unsafe-fixes`` / ``--diff``.

The rules produce fixes as text edits (``Diagnostic.fix``); this package applies
them.  Pieces:

- :mod:`dtypelint.fixer.loop`: the per-file loop (apply non-overlapping fixes, check
  the result parses and compiles, re-analyse, repeat; bounded; all-or-nothing).
- :mod:`dtypelint.fixer.run`: :class:`FileFixer`, the fix step the engine's workers call after checking a file.
- :mod:`dtypelint.fixer.write`: atomic writes that keep the file's mode.
- :mod:`dtypelint.fixer.imports`: :func:`ensure_import` for rules whose fix needs an import.
- :mod:`dtypelint.fixer.output`: unified diffs and the ``--show-fixes`` listing.
- :mod:`dtypelint.fixer.cli`: the end of ``dtypelint check`` in fix mode.
- :func:`fix_source`: fix an in-memory text (editors, LSP "fix all").
"""

from dtypelint.fixer.api import fix_source
from dtypelint.fixer.imports import ensure_import, has_import
from dtypelint.fixer.loop import FixOptions, FixReport, fix_text, syntax_problem
from dtypelint.fixer.write import WriteError, write_atomic

__all__ = [
    "FixOptions", "FixReport", "WriteError", "ensure_import", "fix_source", "fix_text", "has_import",
    "syntax_problem", "write_atomic",
]
