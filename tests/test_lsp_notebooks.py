"""`dtypelint lsp` with notebooks (LSP 3.17 notebook sync), end to end with a real client (pytest-lsp).

The client sends a notebook the way VS Code does: ``notebookDocument/didOpen`` with one text document per
cell (``vscode-notebook-cell:`` URIs), then ``notebookDocument/didChange`` for edits inside a cell and for
cells added or removed.  The server analyses the Python cells together and publishes per cell.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import ROOT, TESTS, subprocess_env

SERVER = [sys.executable, str(TESTS / "fakerule.py"), "lsp", "--debounce", "0.05", "--timeout", "10"]
REAL_SERVER = [sys.executable, "-m", "dtypelint", "lsp", "--debounce", "0.05"]
CODE, MARKUP = T.NotebookCellKind.Code, T.NotebookCellKind.Markup


async def _session(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root
    caps = T.ClientCapabilities(
        notebook_document=T.NotebookDocumentClientCapabilities(
            synchronization=T.NotebookDocumentSyncClientCapabilities()),
        text_document=T.TextDocumentClientCapabilities(
            publish_diagnostics=T.PublishDiagnosticsClientCapabilities(related_information=True)),
    )
    result = await lsp_client.initialize_session(T.InitializeParams(capabilities=caps, root_uri=root.as_uri()))
    lsp_client.server_capabilities = result.capabilities


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=subprocess_env()))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    await _session(lsp_client, tmp_path_factory)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=REAL_SERVER, server_env=subprocess_env()))
async def real_client(lsp_client: LanguageClient, tmp_path_factory):
    await _session(lsp_client, tmp_path_factory)
    yield
    await lsp_client.shutdown_session()


class Notebook:
    """A notebook open in the client; cells are (kind, text); cell URIs as VS Code makes them."""

    def __init__(self, client: LanguageClient, name: str, cells: list[tuple[T.NotebookCellKind, str]]):
        self.client = client
        path = client.root / name
        path.write_text("{}")  # VS Code opens notebooks that exist on disk; the server reads only the cells
        self.uri = path.as_uri()
        self.version = 1
        self._serial = 0
        self.cells: list[tuple[T.NotebookCellKind, str, str]] = []  # (kind, uri, text)
        items = []
        for kind, text in cells:
            uri = self._new_uri()
            self.cells.append((kind, uri, text))
            items.append(self._item(kind, uri, text))
        client.notebook_document_did_open(T.DidOpenNotebookDocumentParams(
            notebook_document=T.NotebookDocument(uri=self.uri, notebook_type="jupyter-notebook", version=1,
                                                 cells=[T.NotebookCell(kind=k, document=u) for k, u, _ in self.cells]),
            cell_text_documents=items))

    def _new_uri(self) -> str:
        self._serial += 1
        return f"vscode-notebook-cell:{Path(self.uri[len('file://'):]).as_posix()}#W{self._serial}sZmlsZQ%3D%3D"

    @staticmethod
    def _item(kind, uri, text) -> T.TextDocumentItem:
        return T.TextDocumentItem(uri=uri, language_id="python" if kind == CODE else "markdown", version=1, text=text)

    def uri_of(self, i: int) -> str:
        return self.cells[i][1]

    def edit_cell(self, i: int, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        self.version += 1
        kind, uri, _ = self.cells[i]
        self.client.notebook_document_did_change(T.DidChangeNotebookDocumentParams(
            notebook_document=T.VersionedNotebookDocumentIdentifier(uri=self.uri, version=self.version),
            change=T.NotebookDocumentChangeEvent(cells=T.NotebookDocumentCellChanges(text_content=[
                T.NotebookDocumentCellContentChanges(
                    document=T.VersionedTextDocumentIdentifier(uri=uri, version=self.version),
                    changes=[T.TextDocumentContentChangePartial(
                        range=T.Range(start=T.Position(line=start[0], character=start[1]),
                                      end=T.Position(line=end[0], character=end[1])), text=text)])]))))

    def insert_cell(self, index: int, kind: T.NotebookCellKind, text: str) -> str:
        self.version += 1
        uri = self._new_uri()
        self.cells.insert(index, (kind, uri, text))
        self.client.notebook_document_did_change(T.DidChangeNotebookDocumentParams(
            notebook_document=T.VersionedNotebookDocumentIdentifier(uri=self.uri, version=self.version),
            change=T.NotebookDocumentChangeEvent(cells=T.NotebookDocumentCellChanges(
                structure=T.NotebookDocumentCellChangeStructure(
                    array=T.NotebookCellArrayChange(start=index, delete_count=0,
                                                    cells=[T.NotebookCell(kind=kind, document=uri)]),
                    did_open=[self._item(kind, uri, text)])))))
        return uri

    def delete_cell(self, index: int) -> str:
        self.version += 1
        _, uri, _ = self.cells.pop(index)
        self.client.notebook_document_did_change(T.DidChangeNotebookDocumentParams(
            notebook_document=T.VersionedNotebookDocumentIdentifier(uri=self.uri, version=self.version),
            change=T.NotebookDocumentChangeEvent(cells=T.NotebookDocumentCellChanges(
                structure=T.NotebookDocumentCellChangeStructure(
                    array=T.NotebookCellArrayChange(start=index, delete_count=1),
                    did_close=[T.TextDocumentIdentifier(uri=uri)])))))
        return uri

    def close(self) -> None:
        self.client.notebook_document_did_close(T.DidCloseNotebookDocumentParams(
            notebook_document=T.NotebookDocumentIdentifier(uri=self.uri),
            cell_text_documents=[T.TextDocumentIdentifier(uri=u) for _, u, _ in self.cells]))


async def published(client: LanguageClient, uri: str, until=lambda diags: True, timeout: float = 30.0):
    """The diagnostics of ``uri`` once a publication satisfies ``until``."""

    async def wait():
        while uri not in client.diagnostics or not until(client.diagnostics[uri]):
            await client.wait_for_notification(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        return list(client.diagnostics[uri])

    return await asyncio.wait_for(wait(), timeout)


CELLS = [
    (CODE, "import torch\nx = a.float()\n"),
    (MARKUP, "# Notes\n`torch.mm(` in markdown is not code"),
    (CODE, "%time warmup()\ny = torch.mm(x, b)"),
]


async def test_notebook_sync_is_advertised(client: LanguageClient):
    sync = client.server_capabilities.notebook_document_sync
    assert sync is not None
    (selector,) = sync.notebook_selector
    assert [c.language for c in selector.cells] == ["python"]


async def test_diagnostics_per_cell_with_the_path_across_cells(client: LanguageClient):
    nb = Notebook(client, "nb.ipynb", CELLS)
    (d,) = await published(client, nb.uri_of(2), until=bool)
    assert d.code == "DTL999"
    assert d.range.start == T.Position(line=1, character=4) and d.range.end == T.Position(line=1, character=12)
    # the dataflow starts in the first cell (`.float()`) and ends at the sink in the third
    first, last = d.related_information
    assert first.location.uri == nb.uri_of(0) and first.location.range.start == T.Position(line=1, character=5)
    assert "[cell 1]" in first.message and "fp32" in first.message
    assert last.location.uri == nb.uri_of(2) and last.location.range.start.line == 1
    assert await published(client, nb.uri_of(0)) == []  # a clean code cell gets an empty publication
    assert nb.uri_of(1) not in client.diagnostics  # markdown cells are not analysed


async def test_edits_inside_a_cell_and_to_the_cell_list(client: LanguageClient):
    nb = Notebook(client, "nb.ipynb", CELLS)
    await published(client, nb.uri_of(2), until=bool)
    nb.edit_cell(2, (1, 10), (1, 10), "ul")  # torch.mm -> torch.matmul, typed inside the cell
    nb.edit_cell(2, (1, 10), (1, 10), "mat")
    nb.edit_cell(2, (1, 9), (1, 10), "")
    assert await published(client, nb.uri_of(2), until=lambda ds: not ds) == []
    added = nb.insert_cell(1, CODE, "z = torch.mm(x, x)")  # a new cell between the others
    (d,) = await published(client, added, until=bool)
    assert d.range.start == T.Position(line=0, character=4)
    assert d.related_information[0].location.uri == nb.uri_of(0)
    nb.delete_cell(1)  # its diagnostics are withdrawn
    assert await published(client, added, until=lambda ds: not ds) == []


async def test_a_cell_sees_what_earlier_cells_defined_only_in_order(client: LanguageClient):
    nb = Notebook(client, "nb.ipynb", [(CODE, "y = torch.mm(x, b)"), (CODE, "x = a.float()")])
    (d,) = await published(client, nb.uri_of(0), until=bool)
    assert [r.location.uri for r in d.related_information] == [nb.uri_of(0)]  # the later `.float()` is not its source


async def test_code_actions_and_hover_inside_a_cell(client: LanguageClient):
    nb = Notebook(client, "nb.ipynb", CELLS)
    (d,) = await published(client, nb.uri_of(2), until=bool)
    cell = nb.uri_of(2)
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=cell), range=d.range, context=T.CodeActionContext(diagnostics=[d])))
    fix, ignore, fix_all = actions
    assert fix.title == "DTL999: Use `torch.matmul`" and fix.is_preferred
    assert list(fix.edit.changes) == [cell]
    (edit,) = fix.edit.changes[cell]
    assert edit.new_text == "torch.matmul" and edit.range == d.range
    (edit,) = ignore.edit.changes[cell]
    assert edit.new_text == "  # noqa: DTL999" and edit.range.start == T.Position(line=1, character=18)
    assert fix_all.kind == "source.fixAll.dtypelint" and list(fix_all.edit.changes) == [cell]
    assert apply(CELLS[2][1], fix_all.edit.changes[cell]) == "%time warmup()\ny = torch.matmul(x, b)"

    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=cell), position=T.Position(line=1, character=6)))
    assert "DTL999" in hover.contents.value and "[cell 1]" in hover.contents.value
    nothing = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=nb.uri_of(0)), position=T.Position(line=0, character=0)))
    assert nothing is None


async def test_fix_all_in_a_cell_with_several_findings_keeps_its_magics(client: LanguageClient):
    text = "%time warmup()\ny = torch.mm(x, b)\n!nvidia-smi\nw = torch.mm(y, b)"
    nb = Notebook(client, "nb.ipynb", [CELLS[0], (CODE, text)])
    await published(client, nb.uri_of(1), until=lambda ds: len(ds) == 2)
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=nb.uri_of(1)),
        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0)),
        context=T.CodeActionContext(diagnostics=[], only=[T.CodeActionKind.SourceFixAll])))
    (fix_all,) = actions
    assert list(fix_all.edit.changes) == [nb.uri_of(1)]
    assert apply(text, fix_all.edit.changes[nb.uri_of(1)]) == text.replace("torch.mm(", "torch.matmul(")


def apply(text: str, edits) -> str:
    """Apply LSP text edits (ASCII text: characters are code points) to ``text``."""
    lines = text.split("\n")

    def offset(p: T.Position) -> int:
        return sum(len(line) + 1 for line in lines[:p.line]) + p.character

    for e in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[:offset(e.range.start)] + e.new_text + text[offset(e.range.end):]
    return text


async def test_applying_the_ignore_action_in_a_cell_silences_it(client: LanguageClient):
    nb = Notebook(client, "nb.ipynb", CELLS)
    (d,) = await published(client, nb.uri_of(2), until=bool)
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=nb.uri_of(2)), range=d.range,
        context=T.CodeActionContext(diagnostics=[d])))
    (edit,) = [a for a in actions if a.title.startswith("Ignore")][0].edit.changes[nb.uri_of(2)]
    nb.edit_cell(2, (edit.range.start.line, edit.range.start.character),
                 (edit.range.end.line, edit.range.end.character), edit.new_text)
    assert await published(client, nb.uri_of(2), until=lambda ds: not ds) == []


async def test_close_withdraws_every_cell(client: LanguageClient):
    nb = Notebook(client, "nb.ipynb", CELLS)
    await published(client, nb.uri_of(2), until=bool)
    nb.close()
    assert await published(client, nb.uri_of(2), until=lambda ds: not ds) == []
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=nb.uri_of(2)),
        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0)),
        context=T.CodeActionContext(diagnostics=[])))
    assert list(actions) == []


async def test_syntax_error_in_a_cell_is_reported_on_that_cell(client: LanguageClient):
    nb = Notebook(client, "nb.ipynb", [(CODE, "import torch\n"), (CODE, "def f(:\n    pass\n")])
    (d,) = await published(client, nb.uri_of(1), until=bool)
    assert d.code == "DTL001" and d.range.start.line == 0


async def test_jupyterlab_virtual_document_is_linted_as_python(client: LanguageClient):
    """jupyterlab-lsp sends a notebook's joined cells as one Python document named ….ipynb."""
    folder = client.root / ".virtual_documents"
    folder.mkdir()
    uri = (folder / "nb.ipynb").as_uri()
    text = "import torch\n%matplotlib inline\nx = a.float()\n\n\ny = torch.mm(x, b)\n"
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        text_document=T.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    (d,) = await published(client, uri, until=bool)
    assert d.code == "DTL999" and d.range.start.line == 5
    json_uri = (client.root / "raw.ipynb").as_uri()  # the notebook's JSON opened as text is not Python
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        text_document=T.TextDocumentItem(uri=json_uri, language_id="json", version=1, text='{"cells": []}')))
    await asyncio.sleep(0.5)
    assert json_uri not in client.diagnostics


async def test_real_rules_across_cells_with_a_fix_that_stays_in_its_cell(real_client: LanguageClient):
    """Seed 1 split into cells: the helper that upcasts is defined two cells before the attention that breaks."""
    client = real_client
    text = (ROOT / "fixtures" / "seed1_bmm_attention_helper.py").read_text()
    head, rest = text.split("\n\n\ndef attention_scores", 1)
    helper, model = ("def attention_scores" + rest).split("\n\n\nclass CrossAttention", 1)
    cells = [(CODE, head + "\n"), (CODE, helper + "\n"), (MARKUP, "## The model"), (CODE, "class CrossAttention" + model)]
    nb = Notebook(client, "unet.ipynb", cells)
    diags = await published(client, nb.uri_of(3), until=lambda ds: len(ds) >= 2)
    assert [d.code for d in diags] == ["DTL101", "DTL101"]
    d = diags[0]
    model_lines = cells[3][1].splitlines()
    assert "torch.bmm(probs, v)" in model_lines[d.range.start.line]
    assert {r.location.uri for r in d.related_information} >= {nb.uri_of(1), nb.uri_of(3)}  # helper cell -> sink
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=nb.uri_of(3)), range=d.range,
        context=T.CodeActionContext(diagnostics=[d])))
    fix = [a for a in actions if a.kind == T.CodeActionKind.QuickFix and a.title.startswith("DTL101")][0]
    assert list(fix.edit.changes) == [nb.uri_of(3)]
    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=nb.uri_of(3)), position=d.range.start))
    assert "DTL101" in hover.contents.value and "## Why is this bad?" in hover.contents.value
