"""dtypelint diagnostics as LSP ``Diagnostic`` objects (plain JSON-ready dicts).

LSP positions are 0-based; ``character`` counts code units of the negotiated
position encoding (UTF-16 unless the client offers another), while dtypelint
columns are 1-based code points, so conversion needs the line's text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from dtypelint.diagnostics import Diagnostic, Edit

SEVERITY = {"error": 1, "warning": 2, "info": 3, "hint": 4}
SOURCE = "dtypelint"


def character(line: str, column: int, encoding: str = "utf-16") -> int:
    """0-based LSP character of a 1-based code-point column in ``line``."""
    prefix = line[: max(0, column - 1)]
    if column - 1 > len(line):  # past the end (e.g. the newline): keep the overshoot
        extra = column - 1 - len(line)
    else:
        extra = 0
    if encoding == "utf-8":
        return len(prefix.encode("utf-8")) + extra
    if encoding == "utf-32":
        return len(prefix) + extra
    return len(prefix.encode("utf-16-le")) // 2 + extra


def column_of(line: str, char: int, encoding: str = "utf-16") -> int:
    """1-based code-point column of a 0-based LSP character (inverse of ``character``)."""
    if encoding == "utf-32":
        return char + 1
    units = 0
    for i, ch in enumerate(line):
        if units >= char:
            return i + 1
        units += len(ch.encode("utf-8")) if encoding == "utf-8" else (2 if ord(ch) > 0xFFFF else 1)
    return len(line) + 1 + max(0, char - units)


def uri_for(filename: str) -> str:
    try:
        return Path(os.path.abspath(filename)).as_uri()  # as the user named it: symlinks are not resolved
    except ValueError:
        return filename


class Lines:
    """Line texts of the files a conversion touches (the buffer for the current document)."""

    def __init__(self, texts: dict[str, str] | None = None, reader: Callable[[str], str | None] | None = None):
        self._texts = {k: v.splitlines() for k, v in (texts or {}).items()}
        self._reader = reader

    def line(self, filename: str, row: int) -> str:
        if filename not in self._texts:
            text = None
            if self._reader is not None:
                text = self._reader(filename)
            else:
                try:  # a FIFO or a device would block
                    text = Path(filename).read_text(encoding="utf-8", errors="replace") if Path(filename).is_file() else None
                except OSError:
                    text = None
            self._texts[filename] = (text or "").splitlines()
        lines = self._texts[filename]
        return lines[row - 1] if 0 < row <= len(lines) else ""


def position(lines: Lines, filename: str, row: int, column: int, encoding: str) -> dict[str, int]:
    row = max(1, row)
    return {"line": row - 1, "character": character(lines.line(filename, row), max(1, column), encoding)}


def lsp_range(lines: Lines, filename: str, start, end, encoding: str) -> dict[str, Any]:
    if (end.row, end.column) < (start.row, start.column):
        end = start
    return {"start": position(lines, filename, start.row, start.column, encoding),
            "end": position(lines, filename, end.row, end.column, encoding)}


def text_edit(lines: Lines, filename: str, edit: Edit, encoding: str) -> dict[str, Any]:
    return {"range": lsp_range(lines, filename, edit.start, edit.end, encoding), "newText": edit.content}


def to_lsp(d: Diagnostic, lines: Lines, encoding: str = "utf-16", uri: str | None = None,
           text_filename: str | None = None) -> dict[str, Any]:
    """One LSP Diagnostic.  ``text_filename`` names the text the rows refer to (defaults to the file)."""
    tf = text_filename or d.filename
    out: dict[str, Any] = {
        "range": lsp_range(lines, tf, d.start, d.end, encoding),
        "severity": SEVERITY.get(d.severity, 2),
        "code": d.code,
        "source": SOURCE,
        "message": d.message + (f" (breaks in: {', '.join(d.regimes)})" if d.regimes else ""),
    }
    if d.url:
        out["codeDescription"] = {"href": d.url}
    if d.path:
        doc_uri = uri or uri_for(d.filename)
        related = []
        for step in d.path:
            same = step.filename == d.filename
            step_uri = doc_uri if same else uri_for(step.filename)
            pos = position(lines, tf if same else step.filename, step.row, step.column, encoding)
            related.append({"location": {"uri": step_uri, "range": {"start": pos, "end": pos}},
                            "message": step.message})
        out["relatedInformation"] = related
    data: dict[str, Any] = {"name": d.name, "regimes": list(d.regimes)}
    if d.cell is not None:
        data["cell"] = d.cell
    if d.fix:
        data["fix"] = {
            "applicability": d.fix.applicability,
            "message": d.fix.message,
            "edits": [text_edit(lines, tf, e, encoding) for e in d.fix.edits],
        }
    out["data"] = data
    return out
