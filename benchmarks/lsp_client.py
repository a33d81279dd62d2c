"""A minimal Language Server Protocol client over stdio (JSON-RPC with Content-Length framing).

Enough to time what an editor sees: open a document and wait for its diagnostics,
change it and wait for the diagnostics of the new version.  Kept dependency-free so
the benchmark measures the server, not a client library.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path


class LspClient:
    def __init__(self, cmd: list[str], cwd: Path, env: dict | None = None):
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self._next_id = 0
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length is None:
                continue
            self.messages.put((time.perf_counter(), json.loads(out.read(length))))

    def _send(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: dict, timeout: float = 60) -> dict:
        self._next_id += 1
        rid = self._next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)[1]

    def wait(self, match, timeout: float) -> tuple[float, dict]:
        """(arrival time, message) of the first message that ``match`` accepts."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no matching message from the language server")
            when, msg = self.messages.get(timeout=remaining)
            if "id" in msg and "method" in msg:  # a request from the server: answer it
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                continue
            if match(msg):
                return when, msg

    def drain(self, quiet: float) -> None:
        """Discard messages until none arrived for ``quiet`` seconds."""
        while True:
            try:
                self.messages.get(timeout=quiet)
            except queue.Empty:
                return

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout=10)
            self.notify("exit", {})
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def diagnostics_for(uri: str, version: int | None = None):
    def match(msg: dict) -> bool:
        if msg.get("method") != "textDocument/publishDiagnostics" or msg["params"].get("uri") != uri:
            return False
        return version is None or msg["params"].get("version") in (version, None)
    return match


def time_editor_session(cmd: list[str], workspace: Path, file: Path, edits: int = 5, env: dict | None = None,
                        timeout: float = 120) -> dict:
    """Open ``file`` in a server started in ``workspace``; time open -> diagnostics and edit -> diagnostics.

    An edit appends a comment line at the end (the whole document is sent, as a client
    without incremental sync does); each edit waits for the diagnostics of its version.
    """
    client = LspClient(cmd, workspace, env)
    try:
        client.request("initialize", {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {
            "textDocument": {"publishDiagnostics": {"versionSupport": True}}}}, timeout=timeout)
        client.notify("initialized", {})
        uri = file.as_uri()
        text = file.read_text(encoding="utf-8")
        t0 = time.perf_counter()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": text}})
        when, first = client.wait(diagnostics_for(uri), timeout)
        open_s = when - t0
        client.drain(1.5)  # the workspace index's first build re-publishes; let it settle
        edit_s = []
        for i in range(edits):
            version = 2 + i
            text = text + f"# edit {i}\n"
            t0 = time.perf_counter()
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"text": text}]})
            when, _ = client.wait(diagnostics_for(uri, version), timeout)
            edit_s.append(when - t0)
            client.drain(0.3)
        return {"open": open_s, "edits": edit_s, "diagnostics": len(first["params"]["diagnostics"])}
    finally:
        client.close()
