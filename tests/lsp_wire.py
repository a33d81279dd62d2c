"""A raw JSON-RPC client for ``dtypelint lsp`` over stdio: it can send bytes no typed client would."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable


class WireClient:
    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.responses: dict[Any, dict] = {}
        self.notifications: list[dict] = []
        self._inbox: queue.Queue = queue.Queue()
        self._next_id = 1000
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr = b""
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    # -- transport -------------------------------------------------------------------
    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers: dict[str, str] = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii", "replace").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self._inbox.put(json.loads(body))

    def _drain_stderr(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read(4096), b""):
            self._stderr = (self._stderr + chunk)[-20000:]

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    def write_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict | bytes) -> None:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.write_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _pump(self, timeout: float) -> None:
        try:
            msg = self._inbox.get(timeout=timeout)
        except queue.Empty:
            return
        if isinstance(msg, dict) and "method" not in msg and "id" in msg:
            self.responses[json.dumps(msg["id"])] = msg
        elif isinstance(msg, dict) and "method" in msg and "id" in msg:  # a request from the server: answer it
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
        else:
            self.notifications.append(msg)

    # -- JSON-RPC --------------------------------------------------------------------
    def request(self, method: str, params: Any = None, timeout: float = 30.0, id: Any = None) -> dict:
        if id is None:
            self._next_id += 1
            id = self._next_id
        self.send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        return self.wait_response(id, timeout)

    def wait_response(self, id: Any, timeout: float = 30.0) -> dict:
        key = json.dumps(id)
        end = time.monotonic() + timeout
        while key not in self.responses:
            if time.monotonic() > end:
                raise TimeoutError(f"no response to {id!r}; server stderr:\n{self.stderr}")
            self._pump(0.1)
        return self.responses.pop(key)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = 30.0) -> dict:
        end = time.monotonic() + timeout
        seen = 0
        while True:
            for msg in self.notifications[seen:]:
                if predicate(msg):
                    return msg
            seen = len(self.notifications)
            if time.monotonic() > end:
                raise TimeoutError(f"no such notification; server stderr:\n{self.stderr}")
            self._pump(0.1)

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = 30.0) -> list[dict]:
        def match(msg: dict) -> bool:
            if msg.get("method") != "textDocument/publishDiagnostics":
                return False
            p = msg["params"]
            return p["uri"] == uri and (version is None or p.get("version") == version)

        return self.wait_for(match, timeout)["params"]["diagnostics"]

    # -- session ---------------------------------------------------------------------
    def initialize(self, root: Path) -> dict:
        answer = self.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                                             "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}]})
        self.notify("initialized", {})
        return answer

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                              "version": version, "text": text}})

    def alive_and_answering(self, timeout: float = 30.0) -> bool:
        """The server answers a real request (hover on nothing is a null result, not an error)."""
        answer = self.request("textDocument/hover", {"textDocument": {"uri": "file:///nowhere.py"},
                                                    "position": {"line": 0, "character": 0}}, timeout=timeout)
        return "result" in answer and self.proc.poll() is None

    def close(self) -> int:
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None, timeout=20)
                self.notify("exit")
                return self.proc.wait(timeout=20)
            return self.proc.returncode
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                try:
                    stream.close()
                except OSError:
                    pass
