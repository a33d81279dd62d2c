"""`dtypelint lsp` end to end: a real LSP client (pytest-lsp) talks to the server over stdio."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import MODEL, ROOT, TESTS, subprocess_env

SERVER = [sys.executable, str(TESTS / "fakerule.py"), "lsp", "--debounce", "0.05", "--timeout", "3"]
IN_PROCESS_SERVER = [sys.executable, str(TESTS / "fakerule.py"), "lsp", "--debounce", "0.05", "--no-isolation"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=subprocess_env()))
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    params = T.InitializeParams(
        capabilities=T.ClientCapabilities(
            text_document=T.TextDocumentClientCapabilities(
                publish_diagnostics=T.PublishDiagnosticsClientCapabilities(related_information=True),
            ),
        ),
        root_uri=root.as_uri(),
        workspace_folders=[T.WorkspaceFolder(uri=root.as_uri(), name="ws")],
    )
    lsp_client.root = root
    track_versions(lsp_client)

    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


def track_versions(lsp_client: LanguageClient) -> None:
    """Remember the document version of each publication (pytest-lsp keeps only the diagnostics)."""
    lsp_client.published_versions = {}
    features = lsp_client.protocol.fm.features
    original = features[T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def on_publish(*args):
        params = args[-1]
        lsp_client.published_versions[params.uri] = params.version
        return original(*args)

    features[T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish


async def open_doc(client: LanguageClient, name: str, text: str, folder: Path | None = None) -> str:
    path = (folder or client.root) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        text_document=T.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await wait_diagnostics(client, uri, version=1)
    return uri


async def wait_diagnostics(client: LanguageClient, uri: str, version: int | None = None, timeout: float = 20.0):
    """Wait until the server has published diagnostics for ``uri`` (for the given document version)."""

    async def until():
        while not (uri in client.diagnostics and (version is None or client.published_versions.get(uri) == version)):
            await client.wait_for_notification(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        return client.diagnostics[uri]

    return await asyncio.wait_for(until(), timeout)


def change(client: LanguageClient, uri: str, version: int, start: tuple[int, int], end: tuple[int, int], text: str):
    client.text_document_did_change(T.DidChangeTextDocumentParams(
        text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[T.TextDocumentContentChangePartial(
            range=T.Range(start=T.Position(line=start[0], character=start[1]),
                          end=T.Position(line=end[0], character=end[1])),
            text=text)]))


async def latest(client: LanguageClient, uri: str, settle: float = 0.6):
    await asyncio.sleep(settle)
    return list(client.diagnostics.get(uri, []))


async def test_diagnostics_on_open(client: LanguageClient):
    uri = await open_doc(client, "model.py", MODEL)
    diags = client.diagnostics[uri]
    assert len(diags) == 1
    d = diags[0]
    assert d.code == "DTL999" and d.source == "dtypelint"
    assert d.severity == T.DiagnosticSeverity.Error
    assert d.range.start == T.Position(line=6, character=15) and d.range.end == T.Position(line=6, character=23)
    assert d.code_description.href.endswith("/DTL999-test-hazard/")
    assert [r.location.range.start.line for r in d.related_information] == [5, 6]
    assert all(r.location.uri == uri for r in d.related_information)
    assert "fp32" in d.related_information[0].message


async def test_debounced_changes_lint_the_unsaved_buffer(client: LanguageClient):
    uri = await open_doc(client, "model.py", MODEL)
    # several quick edits: rename torch.mm -> torch.matmul one character at a time (on the buffer, not on disk)
    change(client, uri, 2, (6, 23), (6, 23), "ul")
    change(client, uri, 3, (6, 22), (6, 22), "mat")
    change(client, uri, 4, (6, 21), (6, 22), "")
    diags = await latest(client, uri)
    assert diags == [], diags
    assert "torch.mm(" in (client.root / "model.py").read_text()  # the file itself is untouched
    change(client, uri, 5, (7, 0), (7, 0), "y = torch.mm(a, b)\n")
    diags = await latest(client, uri)
    assert [d.range.start.line for d in diags] == [7]


async def test_save_relints(client: LanguageClient):
    uri = await open_doc(client, "model.py", "import torch\n")
    assert list(client.diagnostics[uri]) == []
    change(client, uri, 2, (1, 0), (1, 0), "z = torch.mm(a, b)\n")
    client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=uri)))
    diags = await latest(client, uri)
    assert [d.code for d in diags] == ["DTL999"]


async def test_code_actions(client: LanguageClient):
    text = MODEL + "w2 = torch.mm(a, b)  # noqa: DTL001\n"
    uri = await open_doc(client, "model.py", text)
    diags = client.diagnostics[uri]
    assert len(diags) == 2
    first = diags[0]
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=uri), range=first.range,
        context=T.CodeActionContext(diagnostics=[first])))
    titles = [a.title for a in actions]
    assert titles == ["DTL999: Use `torch.matmul`", "Ignore DTL999 on this line", "dtypelint: fix all safe findings"]
    fix, ignore, _ = actions
    assert fix.kind == T.CodeActionKind.QuickFix and fix.is_preferred
    (edit,) = fix.edit.changes[uri]
    assert edit.new_text == "torch.matmul" and edit.range == first.range
    (edit,) = ignore.edit.changes[uri]
    assert edit.new_text == "  # noqa: DTL999" and edit.range.start == T.Position(line=6, character=29)

    # an existing noqa list is extended, not duplicated
    second = diags[1]
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=uri), range=second.range,
        context=T.CodeActionContext(diagnostics=[second])))
    ignore = [a for a in actions if a.title.startswith("Ignore")][0]
    (edit,) = ignore.edit.changes[uri]
    assert edit.new_text == "# noqa: DTL001, DTL999"

    # source.fixAll.dtypelint applies every safe fix to the buffer
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=uri),
        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0)),
        context=T.CodeActionContext(diagnostics=[], only=[T.CodeActionKind.SourceFixAll])))
    assert [a.kind for a in actions] == ["source.fixAll.dtypelint"]
    (edit,) = actions[0].edit.changes[uri]
    assert edit.new_text == text.replace("torch.mm(", "torch.matmul(")
    assert edit.range.start == T.Position(line=0, character=0)


async def test_applying_the_ignore_action_silences_the_finding(client: LanguageClient):
    uri = await open_doc(client, "model.py", MODEL)
    d = client.diagnostics[uri][0]
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=uri), range=d.range, context=T.CodeActionContext(diagnostics=[d])))
    (edit,) = [a for a in actions if a.title.startswith("Ignore")][0].edit.changes[uri]
    change(client, uri, 2, (edit.range.start.line, edit.range.start.character),
           (edit.range.end.line, edit.range.end.character), edit.new_text)
    assert await latest(client, uri) == []


async def test_hover_shows_rule_docs(client: LanguageClient):
    uri = await open_doc(client, "model.py", MODEL)
    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=6, character=18)))
    assert hover is not None and hover.contents.kind == T.MarkupKind.Markdown
    text = hover.contents.value
    assert "DTL999" in text and "## What it does" in text and "Dataflow" in text and "autocast" in text
    nothing = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=0, character=0)))
    assert nothing is None


async def test_syntax_error_buffer_is_dtl001(client: LanguageClient):
    uri = await open_doc(client, "broken.py", "import torch\n\ndef f(:\n    pass\n")
    diags = client.diagnostics[uri]
    assert [d.code for d in diags] == ["DTL001"] and diags[0].range.start.line == 2


async def test_malformed_requests_do_not_kill_the_server(client: LanguageClient):
    uri = await open_doc(client, "model.py", MODEL)
    with pytest.raises(Exception, match="Method Not Found"):
        await asyncio.wait_for(client.protocol.send_request_async("dtypelint/doesNotExist", None), 10)
    # a code action for a document the server never saw is an empty answer, not an error
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=(client.root / "nope.py").as_uri()),
        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=0)),
        context=T.CodeActionContext(diagnostics=[])))
    assert list(actions) == []
    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=6, character=18)))
    assert hover is not None


async def test_output_of_the_analysis_never_reaches_the_lsp_stream(client: LanguageClient):
    uri = await open_doc(client, "noisy.py", "import torch\n# FAKE_PRINT\ny = torch.mm(a, b)\n")
    assert [d.code for d in client.diagnostics[uri]] == ["DTL999"]
    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=T.Position(line=2, character=6)))
    assert hover is not None


async def test_analysis_crash_and_hang_are_isolated(client: LanguageClient):
    uri = await open_doc(client, "crash.py", "import torch\n# FAKE_NATIVE_CRASH\n")
    (d,) = client.diagnostics[uri]
    assert d.code == "DTL005" and "crashed" in d.message
    uri = await open_doc(client, "hang.py", "import torch\n# FAKE_ENDLESS_ANALYSIS\n")
    (d,) = client.diagnostics[uri]
    assert d.code == "DTL005" and "did not finish" in d.message
    uri = await open_doc(client, "model.py", MODEL)  # a fresh worker serves the next document
    assert [d.code for d in client.diagnostics[uri]] == ["DTL999"]


async def test_nearest_configuration_is_honoured(client: LanguageClient):
    quiet = client.root / "quiet"
    quiet.mkdir()
    (quiet / "pyproject.toml").write_text('[tool.dtypelint]\nignore = ["DTL999"]\n')
    (client.root / "pfi").mkdir()
    (client.root / "pfi" / "dtypelint.toml").write_text('[per-file-ignores]\n"legacy_*.py" = ["DTL999"]\n')
    loud = await open_doc(client, "model.py", MODEL)
    silenced = await open_doc(client, "model.py", MODEL, folder=quiet)
    legacy = await open_doc(client, "legacy_model.py", MODEL, folder=client.root / "pfi")
    other = await open_doc(client, "new_model.py", MODEL, folder=client.root / "pfi")
    assert [d.code for d in client.diagnostics[loud]] == ["DTL999"]
    assert list(client.diagnostics[silenced]) == []
    assert list(client.diagnostics[legacy]) == []
    assert [d.code for d in client.diagnostics[other]] == ["DTL999"]


async def test_close_clears_diagnostics(client: LanguageClient):
    uri = await open_doc(client, "model.py", MODEL)
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=uri)))
    await asyncio.sleep(0.3)
    assert list(client.diagnostics[uri]) == []


def test_lsp_without_the_extra_prints_an_install_hint():
    code = "import sys; sys.modules['pygls'] = None; from dtypelint.cli import main; sys.argv = ['dtypelint', 'lsp']; main()"
    res = subprocess.run([sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert res.returncode == 2
    assert "pip install 'dtypelint[lsp]'" in res.stderr


def test_raw_malformed_messages_get_error_responses_and_the_server_survives():
    """Bytes a typed client cannot send: params of the wrong shape, broken JSON, an unknown method."""
    import json
    import os
    import select
    import time

    proc = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=subprocess_env())

    def send(payload: bytes) -> None:
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
        proc.stdin.flush()

    def responses(until_id, timeout: float = 20.0) -> dict:
        buf, found, end = b"", {}, time.time() + timeout
        while until_id not in found and time.time() < end:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            if ready:
                buf += os.read(proc.stdout.fileno(), 65536)
            while b"\r\n\r\n" in buf:
                head, rest = buf.split(b"\r\n\r\n", 1)
                length = int([h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0].split(b":")[1])
                if len(rest) < length:
                    break
                msg, buf = json.loads(rest[:length]), rest[length:]
                if "id" in msg and "method" not in msg:
                    found[msg["id"]] = msg
        return found

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"capabilities": {}, "processId": None, "rootUri": None}}).encode())
        assert "result" in responses(1)[1]
        send(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode())
        send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
                         "params": {"textDocument": 3, "position": "x"}}).encode())
        assert responses(2)[2]["error"]["code"] == -32602  # InvalidParams, not silence
        send(b"{this is not json")
        send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "dtypelint/nope", "params": {}}).encode())
        assert responses(3)[3]["error"]["code"] == -32601
        # a client that echoes back diagnostics that do not validate (Neovim 0.7 drops range and message)
        uri = (TESTS / "fakerule.py").as_uri()
        text = "import torch\ny = torch.mm(a, b)\n"
        send(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}}).encode())
        request = {"jsonrpc": "2.0", "method": "textDocument/codeAction", "params": {
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 12}},
            "context": {"diagnostics": [{"code": "DTL999", "source": "dtypelint"}]}}}
        titles: list = []
        for attempt in range(50):  # until the first analysis has published
            send(json.dumps({**request, "id": 100 + attempt}).encode())
            answer = responses(100 + attempt)[100 + attempt]
            titles = [a["title"] for a in answer.get("result") or []]
            if titles:
                break
            time.sleep(0.2)
        assert "Ignore DTL999 on this line" in titles
        send(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}).encode())
        assert responses(4)[4]["result"] is None
        send(json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode())
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


# -- the real rules, through `python -m dtypelint lsp` ----------------------------------------

REAL_SERVER = [sys.executable, "-m", "dtypelint", "lsp", "--debounce", "0.05"]
SEED = ROOT / "fixtures" / "seed1_dit_vanilla_attention.py"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=REAL_SERVER, server_env=subprocess_env()))
async def real_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root
    track_versions(lsp_client)
    await lsp_client.initialize_session(T.InitializeParams(capabilities=T.ClientCapabilities(), root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def test_real_rule_diagnostic_fix_and_hover(real_client: LanguageClient):
    client = real_client
    text = SEED.read_text()
    path = client.root / "dit.py"
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        text_document=T.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    diags = await asyncio.wait_for(_first_publication(client, uri), 30)
    (d,) = diags
    assert d.code == "DTL101" and d.range.start == T.Position(line=28, character=12)
    assert len(d.related_information) >= 2 and "half" in d.message
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=uri), range=d.range, context=T.CodeActionContext(diagnostics=[d])))
    fix = [a for a in actions if a.kind == T.CodeActionKind.QuickFix and a.title.startswith("DTL101")][0]
    lines = text.splitlines(keepends=True)
    for edit in sorted(fix.edit.changes[uri], key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        assert edit.range.start.line == edit.range.end.line == 28  # ASCII line: characters == code points
        line = lines[28]
        lines[28] = line[:edit.range.start.character] + edit.new_text + line[edit.range.end.character:]
    assert lines[28] == "        x = attn.to(v.dtype) @ v  # expect: DTL101\n"
    hover = await client.text_document_hover_async(T.HoverParams(
        text_document=T.TextDocumentIdentifier(uri=uri), position=d.range.start))
    assert "DTL101" in hover.contents.value and "## Why is this bad?" in hover.contents.value


async def _first_publication(client: LanguageClient, uri: str):
    while uri not in client.diagnostics:
        await client.wait_for_notification(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics[uri]


NVIM_SCRIPT = TESTS / "editors" / "nvim_smoke.lua"


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim is not installed")
def test_neovim_builtin_client(tmp_path):
    """Neovim's own LSP client (0.7+): diagnostics, code actions, fix-all, hover, re-lint of an unsaved edit."""
    (tmp_path / "dit.py").write_text(SEED.read_text())
    out = tmp_path / "out.txt"
    env = subprocess_env()
    env.update(DTYPELINT_CMD=f"{sys.executable} -m dtypelint lsp", NVIM_OUT=str(out), XDG_STATE_HOME=str(tmp_path),
               XDG_CACHE_HOME=str(tmp_path))
    subprocess.run(["nvim", "--headless", "-u", "NONE", "-c", "set ft=python", "-c", f"luafile {NVIM_SCRIPT}",
                    "dit.py"], cwd=tmp_path, env=env, timeout=120, capture_output=True)
    lines = out.read_text().splitlines()
    assert "diagnostics: DTL101 28:12" in lines, lines
    assert "related: 2" in lines
    assert {"action: Ignore DTL101 on this line", "action: dtypelint: fix all safe findings"} <= set(lines)
    assert "fixed line: x = attn.to(v.dtype) @ v  # expect: DTL101" in lines
    assert any(line.startswith("hover: **DTL101**") for line in lines)
    assert "relinted: 1" in lines


async def test_cross_file_facts_come_from_the_workspace(real_client: LanguageClient):
    """rwkvpkg/layer.py is only wrong because of what rwkvpkg/kernels.py asserts: the CLI and the editor agree."""
    client = real_client
    shutil.copytree(ROOT / "fixtures" / "crossfile" / "rwkvpkg", client.root / "rwkvpkg")
    path = client.root / "rwkvpkg" / "layer.py"
    text = path.read_text()
    uri = path.as_uri()
    client.text_document_did_open(T.DidOpenTextDocumentParams(
        text_document=T.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))

    async def until_found():  # the first publication may come before the workspace index is ready
        while [(d.code, d.range.start.line) for d in client.diagnostics.get(uri, [])] != [("DTL102", 34)]:
            await client.wait_for_notification(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    await asyncio.wait_for(until_found(), 30)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=subprocess_env()))
async def utf8_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root
    track_versions(lsp_client)
    caps = T.ClientCapabilities(general=T.GeneralClientCapabilities(position_encodings=[T.PositionEncodingKind.Utf8]))
    result = await lsp_client.initialize_session(T.InitializeParams(capabilities=caps, root_uri=root.as_uri()))
    lsp_client.negotiated = result.capabilities.position_encoding
    yield
    await lsp_client.shutdown_session()


async def test_positions_follow_the_negotiated_encoding(utf8_client: LanguageClient):
    client = utf8_client
    assert client.negotiated == T.PositionEncodingKind.Utf8
    text = 'import torch\ny = ("é😀", torch.mm(a, b))\n'
    uri = await open_doc(client, "m.py", text)
    (d,) = client.diagnostics[uri]
    # `torch` follows 'y = ("é😀", ' : 11 code points, 15 UTF-8 bytes (é is 2 bytes, 😀 is 4)
    assert d.range.start == T.Position(line=1, character=15)
    actions = await client.text_document_code_action_async(T.CodeActionParams(
        text_document=T.TextDocumentIdentifier(uri=uri), range=d.range, context=T.CodeActionContext(diagnostics=[d])))
    (edit,) = actions[0].edit.changes[uri]
    assert edit.range.start.character == 15 and edit.range.end.character == 23



@pytest_lsp.fixture(config=ClientServerConfig(server_command=IN_PROCESS_SERVER, server_env=subprocess_env()))
async def in_process_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root
    track_versions(lsp_client)
    await lsp_client.initialize_session(T.InitializeParams(capabilities=T.ClientCapabilities(), root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def test_no_isolation_mode_keeps_the_stream_clean(in_process_client: LanguageClient):
    client = in_process_client
    uri = await open_doc(client, "noisy.py", "import torch\n# FAKE_PRINT\ny = torch.mm(a, b)\n")
    assert [d.code for d in client.diagnostics[uri]] == ["DTL999"]
    uri = await open_doc(client, "model.py", MODEL)
    assert [d.code for d in client.diagnostics[uri]] == ["DTL999"]


# -- rule selection on the command line (the VS Code extension's dtypelint.select / dtypelint.ignore) ----------

IGNORING_SERVER = [*SERVER, "--ignore", "DTL999"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=IGNORING_SERVER, server_env=subprocess_env()))
async def ignoring_client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("ws")
    lsp_client.root = root
    track_versions(lsp_client)
    await lsp_client.initialize_session(T.InitializeParams(capabilities=T.ClientCapabilities(), root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def test_ignore_on_the_command_line(ignoring_client: LanguageClient):
    uri = await open_doc(ignoring_client, "model.py", MODEL)
    assert list(ignoring_client.diagnostics[uri]) == []
    uri = await open_doc(ignoring_client, "broken.py", "import torch\ndef f(:\n")  # the other rules still run
    assert [d.code for d in ignoring_client.diagnostics[uri]] == ["DTL001"]


def test_unknown_rule_on_the_command_line_is_a_usage_error():
    res = subprocess.run([*SERVER, "--select", "DTL1,NOPE"], env=subprocess_env(), capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=60)
    assert res.returncode == 2 and "--select" in res.stderr and "NOPE" in res.stderr
