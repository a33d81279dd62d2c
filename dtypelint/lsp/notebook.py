"""LSP 3.17 notebook documents: the Python cells of one open notebook, analysed together.

A notebook arrives as ``notebookDocument/didOpen`` with one text document per cell
(VS Code names them ``vscode-notebook-cell:...``).  The server joins its Python cells
into one module, exactly as ``dtypelint check`` does for an ``.ipynb`` file
(:class:`dtypelint.source.notebook.NotebookSource`: a header line per cell, IPython magics
replaced row for row), so a value made fp32 in one cell and used in a later one is
followed.  Findings are mapped back and published per cell URI; quick fixes, *ignore*,
fix-all and hover work inside a cell.  A fix whose edits stay inside one cell is sent
as those edits; one that reaches into other cells (an import added to the first cell)
rewrites each cell it changes.

Clients without notebook sync (jupyterlab-lsp) send the joined cells as one Python
text document named ``….ipynb``; :func:`pythonise` makes its IPython lines parseable
without moving any row.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from lsprotocol import types as T

from dtypelint.diagnostics import Diagnostic, Edit, Position
from dtypelint.edits import apply_edit_groups
from dtypelint.lsp.convert import Lines, character, position, to_lsp, uri_for
from dtypelint.source.notebook import NotebookError, NotebookSource, pythonise_lines
from dtypelint.source import SourceFile

if TYPE_CHECKING:  # pragma: no cover
    from dtypelint.lsp.server import DtypelintServer

# Sync the Python cells of every notebook type (Jupyter, and any other notebook editor).
NOTEBOOK_SYNC = T.NotebookDocumentSyncOptions(
    notebook_selector=[T.NotebookDocumentFilterWithCells(notebook="*", cells=[T.NotebookCellLanguage(language="python")])],
    save=False,
)


def pythonise(text: str) -> str:
    """``text`` with IPython-only lines (magics, shell escapes) replaced, row for row, by ``pass``."""
    lines = text.splitlines()
    out = pythonise_lines(lines)
    return "\n".join(out) + ("\n" if text.endswith(("\n", "\r")) else "")


@dataclass
class NotebookView:
    """One open notebook as the analysis sees it: its Python cells in order and the row mapping."""

    uri: str
    version: int
    cell_uris: list[str]  # every synced cell, in notebook order (an index into it is a cell index)
    texts: dict[str, str]  # cell uri -> its current text
    source: NotebookSource

    @classmethod
    def from_workspace(cls, workspace, notebook_uri: str) -> "NotebookView | None":
        nb = workspace.get_notebook_document(notebook_uri=notebook_uri)
        if nb is None:
            return None
        cells, uris, texts = [], [], {}
        for cell in nb.cells:
            doc = workspace.text_documents.get(cell.document) or workspace.get_text_document(cell.document)
            language = (getattr(doc, "language_id", None) or "python").lower()
            code = cell.kind == T.NotebookCellKind.Code and language in ("python", "python3", "ipython")
            text = doc.source if code else ""
            cells.append({"cell_type": "code" if code else "markdown", "source": text})
            uris.append(cell.document)
            texts[cell.document] = text
        try:
            source = NotebookSource.from_notebook({"cells": cells, "metadata": {}})
        except NotebookError:  # pragma: no cover - the cells are built above, always well-formed
            return None
        return cls(uri=notebook_uri, version=nb.version, cell_uris=uris, texts=texts, source=source)

    def code_cell_uris(self) -> list[str]:
        return [self.cell_uris[span.index] for span in self.source.cells]

    def locate(self, row: int) -> tuple[str, int] | None:
        """(cell uri, 1-based row in the cell) of a row of the joined module."""
        where = self.source.locate(row)
        if where is None:
            return None
        return self.cell_uris[where[0]], where[1]

    def _cell_point(self, row: int, column: int, is_end: bool) -> tuple[str, int, int] | None:
        """A point of the joined module in cell coordinates; a header row is the start of its cell."""
        for span in self.source.cells:
            if row == span.first_row - 1 and column == 1:  # the header line of this cell
                if is_end:  # the end of the previous cell (after its last newline)
                    prev = [s for s in self.source.cells if s.first_row < span.first_row]
                    if not prev:
                        return None
                    p = prev[-1]
                    return self.cell_uris[p.index], p.line_count + 1, 1
                return self.cell_uris[span.index], 1, 1
        where = self.locate(row)
        if where is None:
            return None
        return where[0], where[1], column

    # -- diagnostics --------------------------------------------------------------------
    def split(self, virtual: list[Diagnostic], encoding: str) -> dict[str, "CellFindings"]:
        """Per code cell uri: its findings in cell coordinates, their LSP form and the joined-module originals."""
        out: dict[str, CellFindings] = {uri: CellFindings() for uri in self.code_cell_uris()}
        first = next(iter(out), None)
        for vd in virtual:
            cd = self.source.to_cells(vd)
            if cd.cell is None:  # a file-level problem (DTL005 on row 1): show it on the first cell
                if first is None:
                    continue
                cell_uri = first
                cd = _at_start(cd, self.source.cells[0].index)
            else:
                cell_uri = self.cell_uris[cd.cell]
            text = self.texts.get(cell_uri, "")
            lsp = to_lsp(cd, Lines({cd.filename: text}), encoding, uri=cell_uri)
            if vd.path:
                lsp["relatedInformation"] = self._related(vd, cd, encoding)
            found = out.setdefault(cell_uri, CellFindings())
            found.diagnostics.append(cd)
            found.lsp.append(lsp)
            found.virtual.append(vd)
        return out

    def _related(self, vd: Diagnostic, cd: Diagnostic, encoding: str) -> list[dict]:
        """The dataflow path as related information: each step in the cell it lies in."""
        related = []
        for step, shown in zip(vd.path, cd.path):
            if step.filename == vd.filename:
                where = self.locate(step.row)
                if where is None:
                    continue
                cell_uri, row = where
                line = _line(self.texts.get(cell_uri, ""), row)
                pos = {"line": row - 1, "character": character(line, max(1, step.column), encoding)}
                step_uri = cell_uri
            else:
                pos = position(Lines(), step.filename, step.row, step.column, encoding)
                step_uri = uri_for(step.filename)
            related.append({"location": {"uri": step_uri, "range": {"start": pos, "end": pos}},
                            "message": shown.message})
        return related

    # -- edits --------------------------------------------------------------------------
    def workspace_edit(self, groups: Sequence[Sequence[Edit]], encoding: str) -> T.WorkspaceEdit | None:
        """Fix edits of the joined module (one group per fix) as an edit of the cells."""
        if len(groups) == 1:
            fine = self._cell_edits(groups[0], encoding)
            if fine is not None:
                return T.WorkspaceEdit(changes=fine)
        return self._rewrite_cells(groups, encoding)

    def _cell_edits(self, edits: Sequence[Edit], encoding: str) -> dict[str, list[T.TextEdit]] | None:
        changes: dict[str, list[T.TextEdit]] = {}
        for e in edits:
            start = self._cell_point(e.start.row, e.start.column, is_end=False)
            end = self._cell_point(e.end.row, e.end.column, is_end=(e.end != e.start))
            if start is None or end is None or start[0] != end[0]:
                return None
            if self._touches_magic(e):
                return None
            text = self.texts.get(start[0], "")
            rng = T.Range(start=T.Position(line=start[1] - 1, character=character(_line(text, start[1]), start[2], encoding)),
                          end=T.Position(line=end[1] - 1, character=character(_line(text, end[1]), end[2], encoding)))
            changes.setdefault(start[0], []).append(T.TextEdit(range=rng, new_text=e.content))
        return changes or None

    def _touches_magic(self, e: Edit) -> bool:
        """An edit on a magic line (a placeholder in the joined module) cannot be sent as is."""
        lines = self.source.text.splitlines()
        return any(0 < row <= len(lines) and "dtypelint-magic-" in lines[row - 1]
                   for row in range(e.start.row, e.end.row + 1))

    def _rewrite_cells(self, groups: Sequence[Sequence[Edit]], encoding: str) -> T.WorkspaceEdit | None:
        source = SourceFile(text=self.source.text)
        new_text, applied = apply_edit_groups(source, [tuple(g) for g in groups])
        if not applied or new_text == source.text:
            return None
        try:
            cells = self.source.split_fixed(new_text)
        except NotebookError:  # an edit that removed a cell header: do not apply it
            return None
        changes: dict[str, list[T.TextEdit]] = {}
        for index, new in cells.items():
            uri = self.cell_uris[index]
            old = self.texts.get(uri, "")
            if new.rstrip("\n") == old.rstrip("\n"):
                continue
            if not old.endswith("\n"):
                new = new.rstrip("\n")
            changes[uri] = [T.TextEdit(range=_whole(old, encoding), new_text=new)]
        return T.WorkspaceEdit(changes=changes) if changes else None


def _line(text: str, row: int) -> str:
    lines = text.splitlines()
    return lines[row - 1] if 0 < row <= len(lines) else ""


def _whole(text: str, encoding: str) -> T.Range:
    lines = text.splitlines()
    if not lines:
        return T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0))
    if text.endswith(("\n", "\r")):
        end = T.Position(line=len(lines), character=0)
    else:
        end = T.Position(line=len(lines) - 1, character=character(lines[-1], len(lines[-1]) + 1, encoding))
    return T.Range(start=T.Position(line=0, character=0), end=end)


def _at_start(d: Diagnostic, cell: int) -> Diagnostic:
    return replace(d, start=Position(1, 1), end=Position(1, 1), fix=None, cell=cell)


@dataclass
class CellFindings:
    diagnostics: list[Diagnostic] = field(default_factory=list)  # in cell coordinates
    lsp: list = field(default_factory=list)  # LSP Diagnostic dicts, then T.Diagnostic
    virtual: list[Diagnostic] = field(default_factory=list)  # the same findings in the joined module


@dataclass
class NotebookState:
    """The server's record of an open notebook: its pending analysis and the cells it published to."""

    pending: object | None = None
    published: set[str] = field(default_factory=set)


@dataclass
class NotebookResult:
    """One analysis of a notebook, ready to publish (computed in a worker thread)."""

    uri: str
    version: int
    view: NotebookView
    per_cell: dict[str, CellFindings]
    config_error: str | None

    def current_version(self, server: "DtypelintServer") -> int | None:
        nb = server.workspace.get_notebook_document(notebook_uri=self.uri)
        return None if nb is None else nb.version

    def publish(self, server: "DtypelintServer") -> None:
        from dtypelint.lsp.server import CellState

        state = server.notebooks.get(self.uri)
        if state is None:
            return
        for cell_uri in state.published - set(self.per_cell):  # cells deleted or turned into markdown
            server.docs.pop(cell_uri, None)
            server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))
        for cell_uri, found in self.per_cell.items():
            server.docs[cell_uri] = CellState(text=self.view.texts.get(cell_uri, ""), diagnostics=found.diagnostics,
                                              lsp=found.lsp, notebook=self.view, virtual=found.virtual)
            server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=cell_uri, diagnostics=found.lsp))
        state.published = set(self.per_cell)


def compute(server: "DtypelintServer", notebook_uri: str, converter) -> NotebookResult | None:
    """Analyse the joined cells of an open notebook (runs in a worker thread)."""
    from pygls.uris import to_fs_path

    view = NotebookView.from_workspace(server.workspace, notebook_uri)
    if view is None:
        return None
    fs_path = to_fs_path(notebook_uri) if notebook_uri.startswith("file:") else None
    path = Path(fs_path) if fs_path else None
    settings, config_error = server.settings_for(path)
    filename = str(path) if path is not None else notebook_uri
    virtual: list[Diagnostic] = []
    if view.source.text.strip() and not (path is not None and settings.is_excluded(path)):
        virtual = server.analyser.lint(view.source.text, filename, str(path) if path else None, settings,
                                       server.project_index(path))
    per_cell = view.split(virtual, server.encoding)
    for found in per_cell.values():
        found.lsp = [converter.structure(d, T.Diagnostic) for d in found.lsp]
    return NotebookResult(uri=notebook_uri, version=view.version, view=view, per_cell=per_cell,
                          config_error=config_error)
