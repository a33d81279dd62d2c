"""`dtypelint lsp` under abuse: malformed JSON-RPC, unknown methods, huge or unparsable buffers and
rapid edits.  After each, the server is still up and answers; at the end it shuts down cleanly."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from conftest import REPO, cli_env  # noqa: E402
from lsp_wire import WireClient  # noqa: E402

SEED = (REPO / "fixtures" / "seed1_dit_vanilla_attention.py").read_text()
SERVER = [sys.executable, "-m", "dtypelint", "lsp", "--debounce", "0.05", "--timeout", "20"]


@pytest.fixture
def server(tmp_path):
    client = WireClient(SERVER, cwd=tmp_path, env=cli_env())
    assert "capabilities" in client.initialize(tmp_path)["result"]
    client.root = tmp_path
    yield client
    assert client.close() == 0, client.stderr  # (pygls logs the malformed messages it refused to stderr)


def uri_of(root: Path, name: str, text: str | None = None) -> str:
    path = root / name
    if text is not None:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path.as_uri()


def codes(diags: list[dict]) -> list[str]:
    return [d["code"] for d in diags]


def test_malformed_messages(server):
    garbage = [
        b"{this is not json",
        b"[1, 2, 3]",  # JSON, but not a JSON-RPC message
        b'"a string"',
        b"null",
        b'{"jsonrpc": "2.0"}',  # neither method nor id
        b'{"jsonrpc": "1.0", "id": 7, "method": "textDocument/hover"}',
        b'{"jsonrpc": "2.0", "id": {"an": "object"}, "method": "textDocument/hover", "params": {}}',
        b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 5}}',
        b'{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": null}',
        b'\xff\xfe\x00 not utf-8',
    ]
    for body in garbage:
        server.send(body)
        assert server.alive_and_answering(), body
    # params of the wrong shape in a request: an error response, not silence
    answer = server.request("textDocument/codeAction", {"textDocument": "nope", "range": 3})
    assert answer["error"]["code"] in (-32602, -32603)
    assert server.alive_and_answering()


def test_broken_headers_do_not_kill_the_server(server):
    server.write_raw(b"X-Nonsense: 1\r\n\r\n")  # a header block without Content-Length
    server.write_raw(b"Content-Length: twelve\r\n\r\n")
    assert server.alive_and_answering()


def test_unknown_methods(server):
    assert server.request("dtypelint/nope", {})["error"]["code"] == -32601
    assert server.request("workspace/doesNotExist", None)["error"]["code"] == -32601
    server.notify("$/someClientNotification", {"x": 1})  # optional notifications are ignored
    server.notify("custom/notification", [1, 2])
    assert server.alive_and_answering()


def test_unparsable_buffers_are_diagnostics(server):
    cases = {
        "syntax.py": ("import torch\ndef f(:\n", "DTL001"),
        "nul.py": ("import torch\x00\ndef f(x):\n    return x\n", None),
        "surrogate.py": ("import torch\nx = '\udcff'\ndef f(x):\n    return x\n", None),
        "deep.py": ("import torch\ndef f(x):\n    return x\nx = " + "(" * 10000 + "1" + ")" * 10000 + "\n", "DTL001"),
        "binaryish.py": ("".join(chr(c) for c in range(1, 0x2FF)) * 20, None),
    }
    for name, (text, code) in cases.items():
        uri = uri_of(server.root, name)
        server.open(uri, text)
        diags = server.diagnostics(uri, timeout=60)
        if code is not None:
            assert code in codes(diags), (name, diags)
        assert server.alive_and_answering(), name
    good = uri_of(server.root, "good.py")
    server.open(good, SEED)
    assert "DTL101" in codes(server.diagnostics(good, timeout=60))


def test_huge_buffer_does_not_block_the_server(server):
    uri = uri_of(server.root, "huge.py")
    huge = 'BLOB = """' + ("x" * 99 + "\n") * 50000 + '"""\n' + SEED  # 5 MB
    server.open(uri, huge)
    start = time.monotonic()
    assert server.alive_and_answering(timeout=30)  # requests are answered while the buffer is analysed
    assert time.monotonic() - start < 30
    diags = server.diagnostics(uri, timeout=120)
    assert codes(diags) in (["DTL101"], ["DTL005"])  # analysed, or over the time limit: reported either way


def test_rapid_edits_end_with_the_diagnostics_of_the_last_version(server):
    uri = uri_of(server.root, "model.py")
    server.open(uri, "import torch\n")
    server.diagnostics(uri, version=1)
    text = "import torch\n"
    for version in range(2, 202):  # 200 edits without waiting: half break the syntax, half repair it
        edit = "def f(:\n" if version % 2 else "\n"
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}},
                                "text": edit}]})
        text = "import torch\n" + edit
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 202},
                                             "contentChanges": [{"text": SEED}]})
    diags = server.diagnostics(uri, version=202, timeout=60)
    assert codes(diags) == ["DTL101"]
    assert server.alive_and_answering()


def test_edits_that_make_no_sense(server):
    uri = uri_of(server.root, "model.py")
    server.open(uri, SEED)
    server.diagnostics(uri, version=1)
    nonsense = [
        {"range": {"start": {"line": 9999, "character": 0}, "end": {"line": 99999, "character": 5}}, "text": "x"},
        {"range": {"start": {"line": 5, "character": 0}, "end": {"line": 2, "character": 0}}, "text": "y"},
        {"range": {"start": {"line": -1, "character": -4}, "end": {"line": 0, "character": 0}}, "text": "z"},
    ]
    for version, change in enumerate(nonsense, 2):
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                 "contentChanges": [change]})
        assert server.alive_and_answering()
    # edits to a document that was never opened, and closing it twice
    ghost = uri_of(server.root, "ghost.py")
    server.notify("textDocument/didChange", {"textDocument": {"uri": ghost, "version": 3},
                                             "contentChanges": [{"text": "x"}]})
    server.notify("textDocument/didClose", {"textDocument": {"uri": ghost}})
    server.notify("textDocument/didClose", {"textDocument": {"uri": ghost}})
    server.notify("textDocument/didSave", {"textDocument": {"uri": ghost}})
    assert server.alive_and_answering()
    # the real document still works
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 10},
                                             "contentChanges": [{"text": SEED}]})
    assert codes(server.diagnostics(uri, version=10, timeout=60)) == ["DTL101"]
