"""``dtypelint lsp``: a Language Server on stdio (pygls + lsprotocol).

- Diagnostics on open and save (at once) and on change (debounced), computed on
  the unsaved buffer with the settings of the nearest ``pyproject.toml`` /
  ``dtypelint.toml`` above the document's path (re-read on each run, so edits to
  the configuration apply without a restart).
- Code actions: a quick fix per fixable finding, "ignore DTL### on this line"
  (appends ``# noqa: DTL###`` or extends the line's ``noqa`` list) and
  ``source.fixAll.dtypelint`` (every safe fix; unsafe fixes are only offered
  one by one).
- Hover on a finding shows its message, regimes, dataflow path and the rule's
  documentation; ``relatedInformation`` carries the dataflow path.
- Notebooks (LSP 3.17 notebook sync): the Python cells of a notebook are analysed
  together and findings are published per cell (``dtypelint.lsp.notebook``).
- Robustness: the analysis of a buffer runs in a child process with a time
  limit, so a native parser crash or a runaway analysis becomes a DTL005
  diagnostic, not a dead server; a syntax error is a DTL001 diagnostic; a bad
  request gets an error response and the server goes on.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import select
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as T
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from dtypelint import __version__
from dtypelint.catalog import load_catalog
from dtypelint.config import ConfigError, ConfigResolver, Settings
from dtypelint.diagnostics import Diagnostic, Position
from dtypelint.edits import apply_edit_groups
from dtypelint.lsp.convert import Lines, character, to_lsp
from dtypelint.lsp import notebook as nb
from dtypelint.source import SourceFile

log = logging.getLogger("dtypelint.lsp")
FIX_ALL_KIND = "source.fixAll.dtypelint"
DEFAULT_DEBOUNCE_S = 0.3
DEFAULT_TIMEOUT_S = 30.0
_converter = get_converter()


# -- the analysis, isolated in a child process -------------------------------------------


def _lint(text: str, filename: str, path: str | None, settings: Settings, index=None) -> list[Diagnostic]:
    from dtypelint.engine import lint_source

    return lint_source(text, filename, settings, index=index, path=Path(path) if path else None)


class WorkspaceIndex:
    """Summaries of the workspace's Python files, for the cross-file facts the command line also uses.

    The analysis of a buffer reads base classes, helper functions and submodule
    ``forward``s of other files from a project index.  The file list is found with the
    command line's discovery (excludes, .gitignore) and re-walked at most every few
    seconds; each file's summary is kept until its mtime or size changes; open buffers
    are summarised from their unsaved text.  Summaries use ``ast`` only (never the
    native parser), so this runs in the server process.
    """

    MAX_FILES = 5000
    RESCAN_S = 5.0

    def __init__(self) -> None:
        self._files: dict[Path, tuple[float, list[Path]]] = {}  # root -> (when, files)
        self._memo: dict[Path, tuple[tuple, dict]] = {}  # path -> (stamp, summary)
        self._lock = threading.Lock()
        self._warm: set[Path] = set()
        self._warming: set[Path] = set()

    def is_warm(self, root: Path) -> bool:
        return root in self._warm

    def warm_up(self, root: Path, on_ready) -> None:
        """Summarise the workspace in a background thread (the first build of a big project takes seconds)."""
        if root in self._warm or root in self._warming:
            return
        self._warming.add(root)

        def build() -> None:
            try:
                self.build(root, None, {})
            except Exception:
                pass
            finally:
                self._warm.add(root)
                self._warming.discard(root)
                on_ready()

        threading.Thread(target=build, name="dtypelint-index", daemon=True).start()

    def _walk(self, root: Path, current: Path | None = None) -> list[Path]:
        from dtypelint.discovery import discover
        from dtypelint.engine import known_codes

        now = time.monotonic()
        cached = self._files.get(root)
        fresh = cached is not None and now - cached[0] < self.RESCAN_S
        if fresh and (current is None or current in cached[1] or current.suffix != ".py"):
            return cached[1]
        resolver = ConfigResolver(known_codes=known_codes(), cwd=root)
        found = discover([root], resolver)
        files = [p.resolve() for p, _ in found.files if p.suffix == ".py"][: self.MAX_FILES]
        self._files[root] = (now, files)
        return files

    def build(self, root: Path, current: Path | None, buffers: dict[Path, str]):
        from dtypelint import analysis
        from dtypelint.context import module_name_for
        from dtypelint.index import ProjectIndex
        from dtypelint.source import SourceError

        parts = []
        with self._lock:
            for path in self._walk(root, current):  # a file not seen yet (new) triggers a re-walk
                if path == current:
                    continue  # lint_source summarises the buffer itself
                try:
                    if path in buffers:
                        text = buffers[path]
                        stamp: tuple = ("buffer", hash(text))
                    else:
                        st = path.stat()
                        stamp = ("disk", st.st_mtime_ns, st.st_size)
                        text = None
                    memo = self._memo.get(path)
                    if memo is not None and memo[0] == stamp:
                        parts.append(memo[1])
                        continue
                    if text is None:
                        text = SourceFile.from_bytes(path.read_bytes()).text
                    part = analysis.summarize(text, module_name_for(path), str(path)) or {}
                except (OSError, SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
                    part = {}
                except Exception:  # a bug in the summaries must not stop the editor
                    part = {}
                self._memo[path] = (stamp, part)
                parts.append(part)
        return ProjectIndex.merge(parts)


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"killed by {name}"
    return f"exit status {os.WEXITSTATUS(status)}" if os.WIFEXITED(status) else f"status {status}"


def _preload() -> None:
    """Import the analysis and read its tables once, so that every forked child starts with them."""
    from dtypelint import engine, rules  # noqa: F401
    from dtypelint.analysis.api import load_api
    from dtypelint.rules import aggregate, render  # noqa: F401

    load_api()


class _WarmUpTimeout(Exception):
    pass


def _warm_up(request: tuple, timeout: float) -> None:
    """Analyse ``request`` in the supervisor itself, for its caches only (the modules it imports, read from disk).

    Children are forked from the supervisor, so what it holds they start with: the next edit of the same file
    skips parsing and summarising the helpers, kernels and base classes in other files.  The result is thrown
    away; a failure or a run past the time limit only leaves the caches colder.
    """
    def stop(signum, frame):
        raise _WarmUpTimeout()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        _lint(*request)
    except BaseException:  # noqa: BLE001 - only a cache warm-up
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _supervise(conn, timeout: float) -> None:
    """The analysis supervisor: forks one child per request, kills it at the time limit.

    It is forked from the server before the server starts any thread, and it never
    starts one itself, so its own forks are safe (forking a process that runs threads
    can deadlock the child on a lock another thread held).  It keeps the analysis
    imported and its caches of other modules warm (``_warm_up``) for the children.
    """
    from dtypelint.analysis.project import foreign_keys

    try:  # standard output is the LSP stream: nothing analysed here may ever write to it
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    except OSError:
        pass
    try:
        _preload()
    except Exception:  # noqa: BLE001 - the children import what they need themselves
        pass
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        r, w = os.pipe()
        known = foreign_keys()
        pid = os.fork()
        if pid == 0:  # the child: analyse, send the pickled result, exit without cleanup
            os.close(r)
            try:
                result: tuple = ("ok", _lint(*request), bool(foreign_keys() - known))
            except BaseException as exc:  # noqa: BLE001 - reported as DTL005
                result = ("error", f"{type(exc).__name__}: {exc}")
            try:
                data = pickle.dumps(result)
            except Exception as exc:
                data = pickle.dumps(("error", f"cannot send the result: {exc}"))
            with os.fdopen(w, "wb") as out:
                out.write(data)
            os._exit(0)
        os.close(w)
        chunks: list[bytes] = []
        deadline = time.monotonic() + timeout
        timed_out = False
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([r], [], [], remaining)
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        os.close(r)
        _, status = os.waitpid(pid, 0)
        if timed_out:
            result = ("timeout", "")
        else:
            try:
                result = pickle.loads(b"".join(chunks)) if chunks else ("crash", _describe_exit(status))
            except Exception:
                result = ("crash", _describe_exit(status))
        colder = result[0] == "ok" and len(result) > 2 and result[2]
        try:
            conn.send(result[:2])
        except (OSError, EOFError):
            return
        if colder:  # the child read modules the supervisor does not hold: read them here, once
            _warm_up(request, timeout)


class Analyser:
    """Runs ``lint_source`` for the server, isolated in a forked child per request.

    A native crash or a runaway analysis becomes a DTL005 diagnostic for that
    buffer; the server and the next request are unaffected.  Where ``fork`` is not
    available (Windows) or ``isolate`` is off, the analysis runs in a server thread.
    """

    def __init__(self, isolate: bool = True, timeout: float = DEFAULT_TIMEOUT_S):
        self.isolate = isolate and hasattr(os, "fork")
        self.timeout = timeout
        self._lock = threading.Lock()
        self._proc = None
        self._conn = None
        self._closed = False
        if self.isolate:
            self._start()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_supervise, args=(child, self.timeout), daemon=True, name="dtypelint-analysis")
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent

    def _stop(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            conn.close()
        if proc is not None:
            proc.kill()
            proc.join(5)

    def lint(self, text: str, filename: str, path: str | None, settings: Settings, index=None) -> list[Diagnostic]:
        from dtypelint.engine import problem

        if not self.isolate:
            try:
                return _lint(text, filename, path, settings, index)
            except Exception as exc:  # never let the analysis take the server down
                return [problem("DTL005", filename, f"analysis failed: {type(exc).__name__}: {exc}")]
        with self._lock:
            if self._closed:
                return []
            if self._proc is None or not self._proc.is_alive():
                self._stop()
                self._start()  # rare: the supervisor itself died
            assert self._conn is not None
            try:
                self._conn.send((text, filename, path, settings, index))
                if not self._conn.poll(self.timeout + 30):
                    raise TimeoutError("the analysis supervisor did not answer")
                kind, payload = self._conn.recv()
            except Exception as exc:
                self._stop()
                return [problem("DTL005", filename, f"the analysis process failed ({exc})")]
        if kind == "ok":
            return payload
        if kind == "timeout":
            return [problem("DTL005", filename, f"analysis did not finish within {self.timeout:g} s; "
                            "the process analysing it was stopped")]
        if kind == "crash":
            return [problem("DTL005", filename, f"the analysis process crashed ({payload}); often a native "
                            "parser crash on extremely deep nesting")]
        return [problem("DTL005", filename, f"analysis failed: {payload}")]

    def close(self) -> None:
        self._closed = True
        self._stop()


# -- per-document state ------------------------------------------------------------------


@dataclass
class DocState:
    version: int | None = None
    text: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    lsp: list[T.Diagnostic] = field(default_factory=list)
    pending: asyncio.Task | None = None


@dataclass
class CellState(DocState):
    """A notebook cell: its findings in cell coordinates, and the same findings in the joined module."""

    notebook: nb.NotebookView | None = None
    virtual: list[Diagnostic] = field(default_factory=list)


@dataclass
class TextResult:
    """One analysis of a text document, ready to publish (computed in a worker thread)."""

    uri: str
    version: int | None
    text: str
    diagnostics: list[Diagnostic]
    lsp: list[T.Diagnostic]
    config_error: str | None

    def current_version(self, server: "DtypelintServer") -> int | None:
        return server.workspace.get_text_document(self.uri).version

    def publish(self, server: "DtypelintServer") -> None:
        if self.uri not in server.docs:
            return  # closed meanwhile
        state = server.docs[self.uri]
        state.version, state.text, state.diagnostics, state.lsp = self.version, self.text, self.diagnostics, self.lsp
        server.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=self.uri, diagnostics=self.lsp,
                                                                            version=self.version))


class Protocol(LanguageServerProtocol):
    """pygls' protocol, plus an error *response* to a request whose params do not deserialise.

    pygls logs such a request and drops it, so a client awaiting the answer would wait
    forever; JSON-RPC wants an ``InvalidParams`` (-32602) error for that request id.
    """

    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            retry = _without_echoed_diagnostics(data)
            if retry is not None:  # the server uses its own copy of the diagnostics anyway
                try:
                    return super().structure_message(retry)
                except JsonRpcException:
                    pass
            if isinstance(data, dict) and "id" in data and "method" in data:
                error = exc if isinstance(exc, JsonRpcInvalidParams) else JsonRpcInvalidParams()
                try:
                    self._send_response(data["id"], error=error.to_response_error())
                except Exception:  # pragma: no cover - the transport is gone
                    pass
            raise


def _without_echoed_diagnostics(data: Any) -> dict | None:
    """A codeAction request with ``context.diagnostics`` emptied, or None.

    Some clients echo back diagnostics that do not validate (Neovim 0.7 sends only the
    fields it kept, without ``range`` and ``message``); the actions are computed from the
    server's own diagnostics for the range, so the request can still be answered.
    """
    if not isinstance(data, dict) or data.get("method") != T.TEXT_DOCUMENT_CODE_ACTION:
        return None
    params = data.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("context"), dict):
        return None
    if not params["context"].get("diagnostics"):
        return None
    return {**data, "params": {**params, "context": {**params["context"], "diagnostics": []}}}


class DtypelintServer(LanguageServer):
    def __init__(self, isolate: bool = True, debounce: float = DEFAULT_DEBOUNCE_S,
                 timeout: float = DEFAULT_TIMEOUT_S, rule_overrides: dict | None = None) -> None:
        super().__init__("dtypelint", __version__, text_document_sync_kind=T.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=nb.NOTEBOOK_SYNC, protocol_cls=Protocol)
        self.debounce = debounce
        self.analyser = Analyser(isolate=isolate, timeout=timeout)
        self.rule_overrides = dict(rule_overrides or {})  # --select / --ignore of `dtypelint lsp`
        self.docs: dict[str, DocState] = {}  # text documents and notebook cells
        self.notebooks: dict[str, nb.NotebookState] = {}
        self._last_config_error: str | None = None
        self.index = WorkspaceIndex()
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- settings ----------------------------------------------------------------------
    def _root(self) -> Path:
        try:
            root = self.workspace.root_path
        except Exception:
            root = None
        return Path(root) if root else Path.cwd()

    @property
    def encoding(self) -> str:
        try:
            enc = self.workspace.position_encoding
        except Exception:
            enc = None
        return str(getattr(enc, "value", enc) or "utf-16")

    # -- linting -----------------------------------------------------------------------
    def compute(self, uri: str) -> TextResult | nb.NotebookResult | None:
        """Lint the current buffer of ``uri`` (in a worker thread); None if there is nothing to publish."""
        if uri in self.notebooks:
            return nb.compute(self, uri, _converter)
        try:
            doc = self.workspace.get_text_document(uri)
        except Exception:
            return None
        text = doc.source
        version = doc.version
        fs_path = to_fs_path(uri) if uri.startswith("file:") else None
        path = Path(fs_path) if fs_path else None
        analysed = text
        if path is not None and path.suffix not in ("", ".py", ".pyi"):
            if (doc.language_id or "").lower() != "python":
                return None  # other languages (and a notebook's JSON) are not linted as text
            analysed = nb.pythonise(text)  # jupyterlab-lsp: a notebook's joined cells, named ….ipynb
        settings, config_error = self.settings_for(path)
        filename = str(path) if path is not None else uri
        if path is not None and settings.is_excluded(path):
            diags: list[Diagnostic] = []
        else:
            diags = self.analyser.lint(analysed, filename, str(path) if path else None, settings,
                                       self.project_index(path))
        lines = Lines({filename: text})
        converted = [_converter.structure(to_lsp(d, lines, self.encoding, uri=uri), T.Diagnostic) for d in diags]
        return TextResult(uri, version, text, diags, converted, config_error)

    def project_index(self, path: Path | None):
        """The workspace's project index (None without a workspace folder on disk)."""
        try:
            root_path = self.workspace.root_path
        except Exception:
            root_path = None
        if path is None or not root_path or not Path(root_path).is_dir():
            return None
        root = Path(root_path)
        try:
            path.resolve().relative_to(root.resolve())
        except ValueError:
            return None  # a file outside the workspace: analysed on its own
        buffers = {}
        for uri in self.text_uris():
            if uri.startswith("file:"):
                try:
                    buffers[Path(to_fs_path(uri)).resolve()] = self.workspace.get_text_document(uri).source
                except Exception:
                    pass
        root = root.resolve()
        if not self.index.is_warm(root):  # lint alone now; the index's first build re-lints the open files
            self.index.warm_up(root, self._index_ready)
            return None
        try:
            return self.index.build(root, path.resolve(), buffers)
        except Exception:  # never let the index take the server down: lint the file alone
            return None

    def _index_ready(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        loop.call_soon_threadsafe(self.relint_all)

    def text_uris(self) -> list[str]:
        """The open text documents (notebook cells are analysed through their notebook)."""
        return [uri for uri, state in self.docs.items() if not isinstance(state, CellState)]

    def relint_all(self) -> None:
        for uri in [*self.text_uris(), *self.notebooks]:
            self.schedule(uri, 0.0)

    def settings_for(self, path: Path | None) -> tuple[Settings, str | None]:
        from dtypelint.engine import known_codes

        root = self._root()
        try:
            resolver = ConfigResolver(known_codes=known_codes(), cwd=root, cli=self.rule_overrides)
            return resolver.for_path(path if path is not None else root), None
        except ConfigError as exc:
            return Settings(root=root), str(exc)

    async def lint_async(self, uri: str, delay: float = 0.0) -> None:
        self._loop = asyncio.get_running_loop()
        if delay:
            await asyncio.sleep(delay)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self.thread_pool, self.compute, uri)
        if result is None:
            return
        config_error = result.config_error
        if config_error and config_error != self._last_config_error:
            self.window_show_message(T.ShowMessageParams(type=T.MessageType.Error, message=f"dtypelint: {config_error}"))
        self._last_config_error = config_error
        try:
            current = result.current_version(self)
        except Exception:
            return
        if current != result.version:
            return  # a newer edit is on its way and its own run will publish
        result.publish(self)

    def schedule(self, uri: str, delay: float) -> None:
        state = self.notebooks[uri] if uri in self.notebooks else self.docs.setdefault(uri, DocState())
        if state.pending is not None and not state.pending.done():
            state.pending.cancel()
        state.pending = asyncio.ensure_future(self.lint_async(uri, delay))

    # -- code actions ------------------------------------------------------------------
    def _edit(self, uri: str, text: str, edits) -> T.WorkspaceEdit:
        lines = Lines({"doc": text})
        enc = self.encoding
        text_edits = []
        for e in edits:
            start = T.Position(line=e.start.row - 1, character=character(lines.line("doc", e.start.row), e.start.column, enc))
            end = T.Position(line=e.end.row - 1, character=character(lines.line("doc", e.end.row), e.end.column, enc))
            text_edits.append(T.TextEdit(range=T.Range(start=start, end=end), new_text=e.content))
        return T.WorkspaceEdit(changes={uri: text_edits})

    def ignore_edit(self, uri: str, text: str, d: Diagnostic):
        from dtypelint.suppressions import _NOQA, _comments, _statement_starts

        lines = text.splitlines()
        row = d.start.row
        if not 0 < row <= len(lines):
            return None
        comments = dict(_comments(text))
        comment = comments.get(row)
        if comment is None and row not in comments:
            starts = _statement_starts(text)
            if lines[row - 1].rstrip().endswith("\\") and row in starts:
                row = starts[row]
                comment = comments.get(row)
        line = lines[row - 1]
        if comment is None and line.rstrip().endswith("\\"):
            return None  # a comment would break the line continuation
        from dtypelint.diagnostics import Edit

        if comment is not None:
            m = _NOQA.search(comment)
            if m and not m.group("codes"):
                return None  # a bare `# noqa` already silences everything on the line
            col0 = line.rfind(comment)
            if m:
                codes = m.group("codes")
                new = comment[: m.start("codes")] + codes.rstrip() + f", {d.code}" + comment[m.end("codes"):]
            else:
                new = comment + f"  # noqa: {d.code}"
            if col0 < 0:
                return None
            edit = Edit(new, Position(row, col0 + 1), Position(row, col0 + 1 + len(comment)))
        else:
            end = len(line.rstrip()) + 1
            edit = Edit(f"  # noqa: {d.code}", Position(row, end), Position(row, len(line) + 1))
        return self._edit(uri, text, [edit])

    def fix_edit(self, uri: str, state: DocState, i: int) -> T.WorkspaceEdit:
        """The quick fix of the ``i``-th finding of a document or cell."""
        if isinstance(state, CellState) and state.notebook is not None:
            edit = state.notebook.workspace_edit([state.virtual[i].fix.edits], self.encoding)
            if edit is not None:
                return edit
        return self._edit(uri, state.text, state.diagnostics[i].fix.edits)

    def fix_all_edit(self, uri: str, state: DocState) -> T.WorkspaceEdit | None:
        if isinstance(state, CellState) and state.notebook is not None:  # the safe fixes of this cell's findings
            groups = [d.fix.edits for d in state.virtual if d.fix and d.fix.applicability == "safe" and d.fix.edits]
            return state.notebook.workspace_edit(groups, self.encoding) if groups else None
        groups = [d.fix.edits for d in state.diagnostics if d.fix and d.fix.applicability == "safe" and d.fix.edits]
        if not groups:
            return None
        source = SourceFile(text=state.text)
        new_text, applied = apply_edit_groups(source, groups)
        if not applied or new_text == state.text:
            return None
        lines = state.text.splitlines()
        last = len(lines)
        end_char = character(lines[-1], len(lines[-1]) + 1, self.encoding) if lines else 0
        end = T.Position(line=max(0, last - 1), character=end_char)
        if state.text.endswith(("\n", "\r")):
            end = T.Position(line=last, character=0)
        return T.WorkspaceEdit(changes={uri: [T.TextEdit(range=T.Range(start=T.Position(line=0, character=0), end=end),
                                                         new_text=new_text)]})


def _overlaps(a: T.Range, b: T.Range) -> bool:
    key = lambda p: (p.line, p.character)  # noqa: E731
    return not (key(a.end) < key(b.start) or key(b.end) < key(a.start))


def _contains(r: T.Range, p: T.Position) -> bool:
    key = lambda q: (q.line, q.character)  # noqa: E731
    return key(r.start) <= key(p) <= key(r.end)


def _kind_wanted(only: list | None, kind: str) -> bool:
    if not only:
        return True
    return any(kind == str(k) or kind.startswith(str(k) + ".") for k in only)


def hover_markdown(d: Diagnostic) -> str:
    parts = [f"**{d.code}** `{d.name}`: {d.message}"]
    if d.regimes:
        parts.append("Breaks in: " + ", ".join(f"`{r}`" for r in d.regimes))
    if d.path:
        parts.append("Dataflow:\n" + "\n".join(f"{i}. line {s.row}: {s.message}" for i, s in enumerate(d.path, 1)))
    if d.fix:
        parts.append(f"Fix ({d.fix.applicability}): {d.fix.message}")
    spec = load_catalog().get(d.code)
    if spec is not None:
        parts.append("---\n" + spec.render_markdown() + f"\n[Documentation]({spec.url})")
    return "\n\n".join(parts)


def build_server(isolate: bool = True, debounce: float = DEFAULT_DEBOUNCE_S,
                 timeout: float = DEFAULT_TIMEOUT_S, rule_overrides: dict | None = None) -> DtypelintServer:
    server = DtypelintServer(isolate=isolate, debounce=debounce, timeout=timeout, rule_overrides=rule_overrides)

    @server.feature(T.INITIALIZED)
    async def initialized(ls: DtypelintServer, params: T.InitializedParams) -> None:
        ls._loop = asyncio.get_running_loop()
        try:
            root_path = ls.workspace.root_path
        except Exception:
            root_path = None
        if root_path and Path(root_path).is_dir():  # start indexing while the user opens the first file
            ls.index.warm_up(Path(root_path).resolve(), ls._index_ready)

    @server.feature(T.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: DtypelintServer, params: T.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0.0)

    @server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: DtypelintServer, params: T.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(T.TEXT_DOCUMENT_DID_SAVE, T.SaveOptions(include_text=False))
    async def did_save(ls: DtypelintServer, params: T.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0.0)

    @server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DtypelintServer, params: T.DidCloseTextDocumentParams) -> None:
        state = ls.docs.pop(params.text_document.uri, None)
        if state is not None and state.pending is not None:
            state.pending.cancel()
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched(ls: DtypelintServer, params: T.DidChangeWatchedFilesParams) -> None:
        ls.relint_all()  # a configuration file may have changed: re-lint open documents

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_OPEN)
    async def notebook_did_open(ls: DtypelintServer, params: T.DidOpenNotebookDocumentParams) -> None:
        ls.notebooks[params.notebook_document.uri] = nb.NotebookState()
        ls.schedule(params.notebook_document.uri, 0.0)

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_CHANGE)
    async def notebook_did_change(ls: DtypelintServer, params: T.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        if uri in ls.notebooks:
            ls.schedule(uri, ls.debounce)

    @server.feature(T.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: DtypelintServer, params: T.DidCloseNotebookDocumentParams) -> None:
        state = ls.notebooks.pop(params.notebook_document.uri, None)
        if state is None:
            return
        if state.pending is not None:
            state.pending.cancel()
        for cell_uri in sorted(state.published | {c.uri for c in params.cell_text_documents}):
            ls.docs.pop(cell_uri, None)
            ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))

    @server.feature(
        T.TEXT_DOCUMENT_CODE_ACTION,
        T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix, T.CodeActionKind.SourceFixAll,
                                               FIX_ALL_KIND], resolve_provider=False),
    )
    def code_action(ls: DtypelintServer, params: T.CodeActionParams) -> list[T.CodeAction]:
        uri = params.text_document.uri
        state = ls.docs.get(uri)
        if state is None:
            return []
        only = params.context.only if params.context else None
        actions: list[T.CodeAction] = []
        if _kind_wanted(only, T.CodeActionKind.QuickFix):
            for i, (d, ld) in enumerate(zip(state.diagnostics, state.lsp)):
                if not _overlaps(ld.range, params.range):
                    continue
                if d.fix and d.fix.edits:
                    actions.append(T.CodeAction(
                        title=f"{d.code}: {d.fix.message}" + (" (unsafe)" if d.fix.applicability == "unsafe" else ""),
                        kind=T.CodeActionKind.QuickFix, diagnostics=[ld],
                        edit=ls.fix_edit(uri, state, i),
                        is_preferred=d.fix.applicability == "safe",
                    ))
                ignore = ls.ignore_edit(uri, state.text, d)
                if ignore is not None:
                    actions.append(T.CodeAction(title=f"Ignore {d.code} on this line", kind=T.CodeActionKind.QuickFix,
                                                diagnostics=[ld], edit=ignore))
        if _kind_wanted(only, FIX_ALL_KIND) or (only and any(str(k) == T.CodeActionKind.SourceFixAll for k in only)):
            edit = ls.fix_all_edit(uri, state)
            if edit is not None:
                actions.append(T.CodeAction(title="dtypelint: fix all safe findings", kind=FIX_ALL_KIND, edit=edit))
        return actions

    @server.feature(T.TEXT_DOCUMENT_HOVER)
    def hover(ls: DtypelintServer, params: T.HoverParams) -> T.Hover | None:
        state = ls.docs.get(params.text_document.uri)
        if state is None:
            return None
        hits = [(d, ld) for d, ld in zip(state.diagnostics, state.lsp) if _contains(ld.range, params.position)]
        if not hits:
            return None
        text = "\n\n---\n\n".join(hover_markdown(d) for d, _ in hits)
        return T.Hover(contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=text), range=hits[0][1].range)

    @server.feature(T.SHUTDOWN)
    def shutdown(ls: DtypelintServer, params: Any) -> None:
        ls.analyser.close()

    return server


def start(isolate: bool = True, debounce: float = DEFAULT_DEBOUNCE_S, timeout: float = DEFAULT_TIMEOUT_S,
          rule_overrides: dict | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="dtypelint-lsp: %(levelname)s %(message)s")
    server = build_server(isolate=isolate, debounce=debounce, timeout=timeout, rule_overrides=rule_overrides)
    # The LSP stream gets its own copy of standard output; fd 1 and sys.stdout then point at stderr,
    # so a stray print (in --no-isolation mode, or anywhere in the server) cannot corrupt the stream.
    stream = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        server.start_io(sys.stdin.buffer, stream)
    finally:
        server.analyser.close()
