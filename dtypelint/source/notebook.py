"""Jupyter notebooks (``.ipynb``) as a source format: code cells in, per-cell positions and fixed cells out.

The code cells become one Python module (cells share a namespace, so dataflow
crosses cells).  Each cell is preceded by a header comment line, and every line
that is not Python is replaced, row for row, by a placeholder statement
``pass  # dtypelint-magic-K`` at the same indentation, so rows stay mappable and
the module still parses:

- IPython line magics (``%time f()``, ``x = %sx ls``), shell escapes (``!pip
  install``, ``files = !ls``), help (``obj?``, ``??obj``) and their ``\\``
  continuation lines;
- whole cells that start with a cell magic (``%%bash``, ``%%time``; like ruff,
  a ``%%`` cell is not analysed).

Diagnostics are mapped back to (cell index, row in cell); ``Diagnostic.cell``
holds the 0-based index among *all* cells of the notebook (what Jupyter shows as
cell N+1), and ``--output-format json`` adds it as ``cell``.

The engine sees a notebook through :class:`NotebookView` (a :class:`SourceView`), like any
source format.  Fixes are written back by :func:`notebook_apply_fixed_source`, which replaces
only the ``source`` values of the cells whose code changed, in place in the
original JSON text: metadata, outputs, key order, indentation, escapes and the
trailing newline stay byte for byte as they were.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from json.decoder import scanstring
from typing import Any, Callable

from dtypelint.diagnostics import Diagnostic, Edit, Fix, PathStep, Position
from dtypelint.source import SourceError, SourceFile, SourceView

__all__ = [
    "CellSpan", "HEADER", "NotebookError", "NotebookSource", "NotebookView", "apply_cell_sources", "cell_lines_reader",
    "cell_source", "is_code_cell", "load_notebook", "notebook_apply_fixed_source", "pythonise_lines",
]

HEADER = "# dtypelint-cell: {index}"
_HEADER_RE = re.compile(r"^# dtypelint-cell: (\d+)$")
_PLACEHOLDER = "pass  # dtypelint-magic-{key}"
_PLACEHOLDER_RE = re.compile(r"^(?P<indent>[ \t]*)pass  # dtypelint-magic-(?P<key>\d+)$")
# `%magic`, `!cmd`, `?obj`, `obj?`, and `x = %magic` / `x = !cmd` assignments
_MAGIC_RE = re.compile(r"^\s*(?:[%!?]|[\w.]+\s*\?{1,2}\s*$|[\w.,\s()\[\]*]+=\s*[%!])")


class NotebookError(Exception):
    """The file is not a notebook dtypelint can read (bad JSON, not nbformat 4)."""


# -- a JSON reader that remembers where each cell's "source" value is ------------------

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


class _SpanDict(dict):
    spans: dict[str, tuple[int, int]]


def _parse(text: str, pos: int) -> tuple[Any, int]:
    pos = _WS.match(text, pos).end()
    if pos >= len(text):
        raise ValueError("unexpected end of JSON")
    ch = text[pos]
    if ch == "{":
        obj = _SpanDict()
        obj.spans = {}
        pos = _WS.match(text, pos + 1).end()
        if text.startswith("}", pos):
            return obj, pos + 1
        while True:
            pos = _WS.match(text, pos).end()
            if not text.startswith('"', pos):
                raise ValueError(f"expected a key at offset {pos}")
            key, pos = scanstring(text, pos + 1)
            pos = _WS.match(text, pos).end()
            if not text.startswith(":", pos):
                raise ValueError(f"expected ':' at offset {pos}")
            start = _WS.match(text, pos + 1).end()
            value, pos = _parse(text, start)
            obj[key] = value
            obj.spans[key] = (start, pos)
            pos = _WS.match(text, pos).end()
            if text.startswith(",", pos):
                pos += 1
                continue
            if text.startswith("}", pos):
                return obj, pos + 1
            raise ValueError(f"expected ',' or '}}' at offset {pos}")
    if ch == "[":
        arr: list = []
        pos = _WS.match(text, pos + 1).end()
        if text.startswith("]", pos):
            return arr, pos + 1
        while True:
            value, pos = _parse(text, pos)
            arr.append(value)
            pos = _WS.match(text, pos).end()
            if text.startswith(",", pos):
                pos += 1
                continue
            if text.startswith("]", pos):
                return arr, pos + 1
            raise ValueError(f"expected ',' or ']' at offset {pos}")
    if ch == '"':
        return scanstring(text, pos + 1)
    for word, value in (("true", True), ("false", False), ("null", None)):
        if text.startswith(word, pos):
            return value, pos + len(word)
    m = _NUMBER.match(text, pos)
    if m:
        s = m.group()
        return (float(s) if any(c in s for c in ".eE") else int(s)), m.end()
    raise ValueError(f"unexpected character {ch!r} at offset {pos}")


def _decode(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not UTF-8: {exc}") from exc


def load_notebook(data: bytes | str) -> tuple[str, _SpanDict]:
    """The notebook's text and parsed JSON (objects remember value spans)."""
    text = _decode(data)
    try:
        json.loads(text)  # the standard parser's error messages are the clearest
        nb, end = _parse(text, 0)
    except (ValueError, RecursionError) as exc:
        raise NotebookError(f"invalid notebook JSON: {exc}") from exc
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("not a Jupyter notebook: no 'cells' list (nbformat 4 is required)")
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or "source" not in cell:
            raise NotebookError(f"cell {i + 1} has no 'source'")
        src = cell["source"]
        if not (isinstance(src, str) or (isinstance(src, list) and all(isinstance(s, str) for s in src))):
            raise NotebookError(f"cell {i + 1}: 'source' must be a string or a list of strings")
    return text, nb


def _source_text(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def is_code_cell(cell: dict, language: str = "python") -> bool:
    return cell.get("cell_type") == "code" and language.lower() in ("python", "python3", "")


def _language(nb: dict) -> str:
    meta = nb.get("metadata") or {}
    info = meta.get("language_info") or {}
    kernel = meta.get("kernelspec") or {}
    return str(info.get("name") or kernel.get("language") or "python")


# -- the Python view ---------------------------------------------------------------------


@dataclass
class CellSpan:
    index: int  # index among all cells
    first_row: int  # virtual row of the cell's first line
    line_count: int


@dataclass
class NotebookSource:
    """The Python module made of a notebook's code cells, and how its rows map to cells."""

    text: str
    cells: list[CellSpan] = field(default_factory=list)
    magics: dict[int, str] = field(default_factory=dict)  # placeholder key -> original line (with newline)
    cell_texts: dict[int, str] = field(default_factory=dict)  # cell index -> its original source

    @classmethod
    def from_bytes(cls, data: bytes | str) -> "NotebookSource":
        _, nb = load_notebook(data)
        return cls.from_notebook(nb)

    @classmethod
    def from_notebook(cls, nb: dict) -> "NotebookSource":
        out = cls(text="")
        if _language(nb).lower() not in ("python", "python3", "ipython", "ipython3"):
            return out
        parts: list[str] = []
        row = 1
        for index, cell in enumerate(nb["cells"]):
            if cell.get("cell_type") != "code":
                continue
            source = _source_text(cell)
            out.cell_texts[index] = source
            lines = source.splitlines()
            python = out._pythonise(lines)
            parts.append(HEADER.format(index=index) + "\n")
            row += 1
            parts.extend(line + "\n" for line in python)
            out.cells.append(CellSpan(index, row, len(python)))
            row += len(python)
        out.text = "".join(parts)
        return out

    def _pythonise(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        whole_cell = bool(lines) and lines[0].lstrip().startswith("%%")
        continuing = False
        indent = ""
        for line in lines:
            if whole_cell or continuing or _MAGIC_RE.match(line):
                if not continuing:
                    indent = "" if whole_cell else line[: len(line) - len(line.lstrip())]
                key = len(self.magics)
                self.magics[key] = line
                out.append(indent + _PLACEHOLDER.format(key=key))
                continuing = line.rstrip().endswith("\\") and not whole_cell
            else:
                out.append(line)
        return out

    # -- mapping -------------------------------------------------------------------
    def locate(self, row: int) -> tuple[int, int] | None:
        """(cell index, 1-based row in cell) of a virtual row; None on a header line."""
        for span in self.cells:
            if span.first_row <= row < span.first_row + max(span.line_count, 1):
                return span.index, row - span.first_row + 1
        if self.cells and row >= self.cells[-1].first_row:
            last = self.cells[-1]
            return last.index, row - last.first_row + 1
        return None

    def virtual_row(self, cell: int, row: int) -> int:
        for span in self.cells:
            if span.index == cell:
                return span.first_row + row - 1
        raise KeyError(f"cell {cell} is not a code cell")

    def to_cells(self, d: Diagnostic) -> Diagnostic:
        """Map a diagnostic on the virtual module to (cell, row in cell)."""
        if d.cell is not None:
            return d
        where = self.locate(d.start.row)
        if where is None:
            return replace(d, cell=None)
        cell, row = where
        delta = d.start.row - row

        def pos(p: Position) -> Position:
            return Position(max(1, p.row - delta), p.column)

        path = []
        for step in d.path:
            if step.filename == d.filename:
                loc = self.locate(step.row)
                if loc is not None:
                    step = PathStep(step.filename, loc[1], step.column, f"[cell {loc[0] + 1}] {step.message}")
            path.append(step)
        fix = d.fix
        if fix is not None:
            fix = Fix(fix.applicability, fix.message,
                      tuple(Edit(e.content, pos(e.start), pos(e.end)) for e in fix.edits))
        return replace(d, start=pos(d.start), end=pos(d.end), path=tuple(path), fix=fix, cell=cell)

    def to_virtual(self, d: Diagnostic) -> Diagnostic:
        """Map a per-cell diagnostic back to rows of :attr:`text` (for the fixer)."""
        if d.cell is None:
            return d
        delta = self.virtual_row(d.cell, 1) - 1

        def pos(p: Position) -> Position:
            return Position(p.row + delta, p.column)

        fix = d.fix
        if fix is not None:
            fix = Fix(fix.applicability, fix.message,
                      tuple(Edit(e.content, pos(e.start), pos(e.end)) for e in fix.edits))
        return replace(d, start=pos(d.start), end=pos(d.end), fix=fix, cell=None)

    def display(self, text: str) -> str:
        """A view of :attr:`text` (or a fixed copy of it) with the magics put back, for diffs."""
        out = []
        for line in text.splitlines(keepends=True):
            m = _PLACEHOLDER_RE.match(line.rstrip("\r\n"))
            if m:
                ending = line[len(line.rstrip("\r\n")):]
                line = self.magics[int(m.group("key"))] + ending
            out.append(line)
        return "".join(out)

    def split_fixed(self, fixed: str) -> dict[int, str]:
        """Cell index -> new source, from a fixed copy of :attr:`text` (magics restored)."""
        out: dict[int, list[str]] = {}
        current: int | None = None
        for line in fixed.splitlines():
            m = _HEADER_RE.match(line)
            if m:
                current = int(m.group(1))
                out[current] = []
                continue
            if current is None:
                if line.strip():
                    raise NotebookError("fixed source has code before the first cell header")
                continue
            pm = _PLACEHOLDER_RE.match(line)
            if pm:
                line = self.magics[int(pm.group("key"))]
            out[current].append(line)
        if set(out) != set(self.cell_texts):
            raise NotebookError("fixed source lost or added a cell header")
        result = {}
        for index, lines in out.items():
            original = self.cell_texts[index]
            text = "\n".join(lines)
            if original.endswith("\n") or (lines and not original and text):
                text += "\n"
            result[index] = text
        return result


# -- writing back ------------------------------------------------------------------------


def pythonise_lines(lines: list[str]) -> list[str]:
    """Lines of one cell (or of cells already joined) with IPython-only lines replaced, row for row."""
    return NotebookSource(text="")._pythonise(lines)


def _render_source(new: str, old_value: Any, old_json: str) -> str:
    """The JSON text for a cell's new ``source``, in the style of the old value."""
    ensure_ascii = "\\u" in old_json and not any(ord(c) > 127 for c in old_json)
    if isinstance(old_value, str):
        return json.dumps(new, ensure_ascii=ensure_ascii)
    parts = new.splitlines(keepends=True)
    if not parts:
        return "[]"
    m = re.match(r"\[(\s*)", old_json)
    lead = m.group(1) if m and old_value else ""
    close = re.search(r"(\s*)\]$", old_json)
    tail = close.group(1) if close and old_value else ""
    if not old_value:  # "[]" before: use nbformat's usual layout, guessed from nothing
        return "[" + ", ".join(json.dumps(p, ensure_ascii=ensure_ascii) for p in parts) + "]"
    sep = "," + lead if "\n" in lead else ", "
    return "[" + lead + sep.join(json.dumps(p, ensure_ascii=ensure_ascii) for p in parts) + tail + "]"


def apply_cell_sources(original: bytes | str, new_sources: dict[int, str]) -> bytes:
    """Replace the ``source`` of the given cells in the original notebook text, nothing else."""
    text, nb = load_notebook(original)
    edits = []
    for index, new in new_sources.items():
        cell = nb["cells"][index]
        if _source_text(cell) == new:
            continue
        start, end = cell.spans["source"]
        edits.append((start, end, _render_source(new, cell["source"], text[start:end])))
    for start, end, content in sorted(edits, reverse=True):
        text = text[:start] + content + text[end:]
    bom = isinstance(original, bytes) and original.startswith(b"\xef\xbb\xbf")
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


def notebook_apply_fixed_source(original_bytes: bytes, fixed_python_source: str) -> bytes:
    """Write a fixed copy of ``NotebookSource.from_bytes(original_bytes).text`` back into the notebook.

    Only the code cells whose code changed get a new ``source``; everything else
    (metadata, outputs, key order, indentation, trailing newline) is unchanged.
    Raises :class:`NotebookError` if the fixed source lost a cell header.
    """
    nb_source = NotebookSource.from_bytes(original_bytes)
    return apply_cell_sources(original_bytes, nb_source.split_fixed(fixed_python_source))


# -- helpers for reporters ---------------------------------------------------------------


def cell_source(notebook_text: str, cell: int) -> str | None:
    """The original source of one cell (for fingerprints and code frames), None if unreadable."""
    try:
        _, nb = load_notebook(notebook_text)
        return _source_text(nb["cells"][cell])
    except (NotebookError, IndexError, KeyError):
        return None


def cell_lines_reader(cell: int) -> Callable[[str], str | None]:
    def read(filename: str) -> str | None:
        try:
            with open(filename, encoding="utf-8-sig") as fh:
                return cell_source(fh.read(), cell)
        except OSError:
            return None

    return read


# -- the view the engine and the fixer use -----------------------------------------------


class NotebookView(SourceView):
    """A notebook as Python code: the code cells (magics as placeholders), findings mapped to cells."""

    def __init__(self, data: bytes, notebook: NotebookSource):
        self.data = data
        self.notebook = notebook
        self.code = SourceFile(text=notebook.text)

    @classmethod
    def from_bytes(cls, data: bytes) -> "NotebookView":
        try:
            return cls(data, NotebookSource.from_bytes(data))
        except NotebookError as exc:
            raise SourceError("decode", f"cannot analyse notebook: {exc}") from exc

    def to_file(self, d: Diagnostic) -> Diagnostic:
        return self.notebook.to_cells(d)

    def to_code(self, d: Diagnostic) -> Diagnostic:
        return self.notebook.to_virtual(d)

    def encode(self, fixed: str) -> tuple[bytes, SourceView]:
        try:
            data = notebook_apply_fixed_source(self.data, fixed)
            return data, NotebookView.from_bytes(data)
        except (NotebookError, SourceError, ValueError) as exc:
            raise SourceError("encode", f"cannot write the fixed cells back into the notebook: {exc}") from exc

    def display(self, text: str) -> str:
        return self.notebook.display(text)
