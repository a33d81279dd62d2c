"""JupyterLab: `jupyter-lsp` (behind jupyterlab-lsp) discovers `dtypelint lsp` through its spec entry point.

With jupyter-lsp installed, its own LanguageServerManager discovers the spec, validates it against its
schema and starts the server through its own stdio session; a notebook's joined cells (what
jupyterlab-lsp sends, a Python document named ….ipynb) come back with diagnostics.
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import entry_points

import pytest

from dtypelint.lsp.jupyter import spec

NOTEBOOK_TEXT = (
    "import torch\nimport torch.nn.functional as F\n%matplotlib inline\n\n\n"
    "def attend(q, k, v):\n"
    "    q = F.normalize(q.float(), dim=-1)\n"
    "    return F.scaled_dot_product_attention(q, k, v)\n"
)


def test_the_entry_point_is_registered():
    found = [ep for ep in entry_points(group="jupyter_lsp_spec_v1") if ep.name == "dtypelint"]
    assert found, "reinstall the package (pip install -e .) so its entry points are registered"
    assert found[0].value == "dtypelint.lsp.jupyter:spec"
    assert found[0].load() is spec


def test_spec_shape():
    (key, value), = spec(None).items()
    assert key == "dtypelint" and value["version"] == 2 and value["languages"] == ["python"]
    assert value["argv"] == [sys.executable, "-m", "dtypelint", "lsp"]
    assert value["requires_documents_on_disk"] is False


def test_spec_without_the_lsp_extra_asks_for_it(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pygls" else real(name, *a))
    assert spec.is_installed(None) is False
    value = spec(None)["dtypelint"]
    assert value["argv"] == [] and "pip install 'dtypelint[lsp]'" in value["troubleshoot"]


def _manager():
    jupyter_lsp = pytest.importorskip("jupyter_lsp", reason="jupyter-lsp is not installed")
    manager = jupyter_lsp.LanguageServerManager()
    manager.init_language_servers()
    return manager


def test_jupyter_lsp_discovers_and_validates_the_spec():
    manager = _manager()
    from jupyter_lsp.schema import LANGUAGE_SERVER_SPEC_MAP

    assert "dtypelint" in manager.language_servers, sorted(manager.language_servers)
    found = manager.language_servers["dtypelint"]
    assert list(LANGUAGE_SERVER_SPEC_MAP.iter_errors({"dtypelint": found})) == []
    assert found["argv"][1:] == ["-m", "dtypelint", "lsp"]


def _websocket(manager):
    """jupyter-lsp's websocket handler (what JupyterLab's browser side talks to), without a socket."""
    from jupyter_lsp.handlers import LanguageServerWebSocketHandler
    from tornado.httputil import HTTPServerRequest
    from tornado.web import Application

    class Socket(LanguageServerWebSocketHandler):
        def __init__(self):  # no tornado connection: messages to the browser go to a queue
            self.request = HTTPServerRequest()
            self.application = Application()
            self.received: asyncio.Queue = asyncio.Queue()

        def write_message(self, message):
            self.received.put_nowait(json.loads(message))

        def send_ping(self):
            pass

    ws = Socket()
    ws.initialize(manager)
    return ws


async def test_diagnostics_through_jupyter_lsps_own_session(tmp_path):
    manager = _manager()
    manager.initialize()
    ws = _websocket(manager)
    await ws.open("dtypelint")  # starts the process, as opening a notebook in JupyterLab does
    session = manager.sessions["dtypelint"]
    assert session.process is not None
    folder = tmp_path / ".virtual_documents"
    folder.mkdir()
    uri = (folder / "attention.ipynb").as_uri()

    async def send(msg):
        await ws.on_message(json.dumps({"jsonrpc": "2.0", **msg}))

    async def until(pred, timeout=60):
        async def wait():
            while True:
                msg = await ws.received.get()
                if pred(msg):
                    return msg
        return await asyncio.wait_for(wait(), timeout)

    try:
        await send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": tmp_path.as_uri(),
                                                                "capabilities": {}}})
        init = await until(lambda m: m.get("id") == 1)
        assert init["result"]["serverInfo"]["name"] == "dtypelint"
        await send({"method": "initialized", "params": {}})
        await send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": NOTEBOOK_TEXT}}})
        published = await until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                and m["params"]["uri"] == uri)
        (d,) = published["params"]["diagnostics"]
        assert d["code"] == "DTL102" and d["range"]["start"]["line"] == 7
        await send({"id": 2, "method": "shutdown"})
        await until(lambda m: m.get("id") == 2)
    finally:
        ws.on_close()  # the last handler gone: jupyter-lsp stops the process
    assert not session.process
