"""The per-file pipeline and the parallel run over a repository.

Phase 1 summarises every file for the project index (cheap, cached on content).
Phase 2 runs, for each file: read bytes -> decode -> text prefilter -> libcst parse
-> analysis -> selection -> suppressions, cached on content + settings + the index
entries it read.  Both phases run in worker processes: a native parser crash kills
only a worker, the files it held are retried one by one, and the one that crashes
again becomes a DTL005 diagnostic.  Nothing here prints; reporters do that.
"""

from __future__ import annotations

import ast
import multiprocessing
import os
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

import libcst as cst

from dtypelint import analysis
from dtypelint.cache import Cache, check_key, content_key
from dtypelint.catalog import load_catalog
from dtypelint.config import Settings
from dtypelint.context import CheckContext, module_name_for
from dtypelint.diagnostics import Diagnostic, Position, rule_url
from dtypelint.index import ProjectIndex
from dtypelint.source import SourceError, SourceFile
from dtypelint.suppressions import parse_suppressions


def known_codes() -> dict[str, bool]:
    """Every rule code mapped to whether it is on by default."""
    return {code: spec.default for code, spec in load_catalog().items()}


def enabled_for(settings: Settings, relpath: str | None) -> frozenset[str]:
    return settings.enabled_codes(known_codes(), relpath)


def display_name(path: Path) -> str:
    """How a path is reported: relative to the working folder when below it."""
    absolute = Path(os.path.abspath(path))  # not resolve(): keep symlinks as the user named them
    for base in (Path(os.path.abspath(Path.cwd())), Path.cwd().resolve()):
        try:
            return printable(absolute.relative_to(base).as_posix())
        except ValueError:
            continue
    return printable(str(path))


def printable(name: str) -> str:
    """A file name that can be written in any report: undecodable bytes in it become U+FFFD."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def problem(code: str, filename: str, message: str, row: int = 1, column: int = 1,
            end: Position | None = None) -> Diagnostic:
    """A could-not-analyse (DTL0xx) diagnostic."""
    spec = load_catalog()[code]
    start = Position(row, column)
    return Diagnostic(
        code=code, name=spec.name, message=message, severity=spec.severity, filename=filename,
        start=start, end=end or start, url=rule_url(code, spec.name),
    )


_SOURCE_ERROR_CODES = {"binary": "DTL003", "decode": "DTL002"}


@dataclass
class FileOutcome:
    """What linting one file produced."""

    filename: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    parsed: bool = False  # False: skipped by the prefilter, or could not be analysed
    failed: bool = False  # a DTL0xx problem
    fix: Any = None  # dtypelint.fixer.FixReport when the task asked for fixes


# -- phase 1: summaries ----------------------------------------------------------------


@dataclass
class _SummaryTask:
    path: Path
    module_name: str


def _summarize_task(task: _SummaryTask, cache: Cache) -> dict[str, Any]:
    try:
        data = task.path.read_bytes()
    except OSError:
        return {}
    key = content_key(data) + ":" + task.module_name
    cached = cache.get("summary", key)
    if cached is not None:
        return cached
    try:
        text = SourceFile.from_bytes(data).text
        result = analysis.summarize(text, task.module_name, str(task.path))
    except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
        result = {}
    except Exception:  # a bug in summaries must not stop the run; phase 2 reports files
        result = {}
    cache.put("summary", key, result)
    return result


# -- phase 2: checks -------------------------------------------------------------------


@dataclass
class CheckTask:
    path: Path | None
    filename: str
    settings: Settings
    enabled: frozenset[str]
    data: bytes | None = None  # stdin / in-memory buffers
    module_name: str = ""
    fix: Any = None  # dtypelint.fixer.FixOptions: apply fixes after checking (--fix, --diff)


def parse_error(exc: cst.ParserSyntaxError, text: str, filename: str) -> Diagnostic:
    """DTL001 for a file libcst rejects; CPython's message and position are clearer when it has one."""
    try:
        ast.parse(text)
    except SyntaxError as py:
        if py.lineno:
            return problem("DTL001", filename, f"SyntaxError: {py.msg}", row=py.lineno, column=max(1, py.offset or 1))
    except (ValueError, RecursionError, MemoryError):
        pass
    else:  # valid Python that libcst cannot parse (e.g. odd tab/space mixes): our limit, not the user's error
        return problem("DTL005", filename, f"the file is valid Python, but dtypelint's parser (libcst) rejects it "
                       f"({exc.message.rstrip('.')}); the file was not analysed")
    message = f"SyntaxError: {exc.message}".rstrip(".")
    return problem("DTL001", filename, message, row=max(1, exc.raw_line), column=max(1, exc.raw_column + 1))


def analyse_text(source: SourceFile, task: CheckTask, index: ProjectIndex) -> tuple[list[Diagnostic], dict[str, str], bool]:
    """Prefilter, parse and analyse decoded text. Returns (diagnostics, index deps, parsed)."""
    text = source.text
    if "skip-file" in text and parse_suppressions(text).skip_file:
        return [], {}, False
    if not analysis.might_contain_hazard(text, task.settings):
        return [], {}, False
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        diags = [parse_error(exc, text, task.filename)]
        return _select(diags, task, text), {}, False
    view = index.view()
    ctx = CheckContext(
        filename=task.filename, path=task.path, module_name=task.module_name, source=source,
        module=module, settings=task.settings, enabled=task.enabled, index=view,
    )
    diags = analysis.check(ctx)
    return _select(diags, task, text), view.dependencies(), True


def _select(diags: Iterable[Diagnostic], task: CheckTask, text: str) -> list[Diagnostic]:
    """Keep enabled, unsuppressed findings; comments are only tokenized when there is a finding."""
    out = [d for d in diags if d.code in task.enabled]
    if out:
        sup = parse_suppressions(text)
        out = [d for d in out if not sup.suppresses(d.code, d.start.row)]
    return sorted(out, key=Diagnostic.sort_key)


def run_check_task(task: CheckTask, index: ProjectIndex, cache: Cache) -> FileOutcome:
    """Lint one file (and fix it when the task asks); never raises for a problem with the file itself."""
    out = FileOutcome(task.filename)
    data = task.data
    if data is None:
        assert task.path is not None
        try:
            data = task.path.read_bytes()
        except OSError as exc:
            return _fail(out, problem("DTL004", task.filename, f"cannot read file: {exc.strerror or exc}"), task)
    out = _check_bytes(task, data, index, cache)
    if task.fix is not None:  # the fix loop runs here, inside the worker: files are fixed in parallel
        from dtypelint.fixer.run import fix_outcome

        out = fix_outcome(task, data, out, index)
    return out


def _check_bytes(task: CheckTask, data: bytes, index: ProjectIndex, cache: Cache) -> FileOutcome:
    out = FileOutcome(task.filename)
    key = check_key(content_key(data), task.settings.analysis_fingerprint(), task.enabled, task.filename)
    cached = cache.get("check", key)
    if cached is not None and index.digest_of(cached["deps"]):
        out.diagnostics = [Diagnostic.from_json(d) for d in cached["diagnostics"]]
        out.parsed = cached["parsed"]
        out.failed = cached["failed"]
        return out
    if (task.path or Path(task.filename)).suffix == ".ipynb":  # code cells, mapped back to cells
        from dtypelint.notebooks import check_notebook

        out, deps = check_notebook(data, task, index)
    else:
        try:
            source = SourceFile.from_bytes(data)
        except SourceError as exc:
            code = _SOURCE_ERROR_CODES[exc.kind]
            return _fail(out, problem(code, task.filename, exc.message, row=exc.row), task)
        out, deps = check_source(source, task, index)
    if deps is not None:  # internal failures are not cached: the next run tries again
        cache.put("check", key, {
            "deps": deps, "parsed": out.parsed, "failed": out.failed,
            "diagnostics": [d.to_json() for d in out.diagnostics],
        })
    return out


def check_source(source: SourceFile, task: CheckTask, index: ProjectIndex) -> tuple[FileOutcome, dict[str, str] | None]:
    """Analyse decoded source; an exception in dtypelint becomes a DTL005 on this file."""
    out = FileOutcome(task.filename)
    try:
        diags, deps, parsed = analyse_text(source, task, index)
    except RecursionError:
        return _fail(out, problem("DTL005", task.filename, "analysis failed: the code is nested too deeply (RecursionError)"), task), None
    except Exception as exc:  # a bug in dtypelint: report it on this file, keep going
        where = traceback.extract_tb(exc.__traceback__)[-1]
        msg = f"analysis failed: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})"
        return _fail(out, problem("DTL005", task.filename, msg), task), None
    out.diagnostics = diags
    out.parsed = parsed
    out.failed = any(d.code.startswith("DTL0") for d in diags)
    return out, deps


def _fail(out: FileOutcome, diag: Diagnostic, task: CheckTask) -> FileOutcome:
    out.failed = True
    if diag.code in task.enabled:
        out.diagnostics = [diag]
    return out


# -- worker plumbing -------------------------------------------------------------------

_WORKER_STATE: dict[str, Any] = {}


def _init_worker(index: ProjectIndex, cache: Cache) -> None:
    _WORKER_STATE["index"] = index
    _WORKER_STATE["cache"] = cache


def _worker_check(task: CheckTask) -> FileOutcome:
    return run_check_task(task, _WORKER_STATE["index"], _WORKER_STATE["cache"])


def _worker_summary(task: _SummaryTask) -> dict[str, Any]:
    return _summarize_task(task, _WORKER_STATE["cache"])


def _mp_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _parallel(fn: Callable, tasks: list, jobs: int, init_args: tuple,
              on_crash: Callable[[Any, str], Any], progress: Callable[[], None] | None = None) -> list:
    """Run ``fn`` over tasks in worker processes, isolating tasks that kill their worker.

    At most ``jobs`` tasks are in flight, so when a worker dies only those are
    suspects: each is retried alone in a fresh process, and one that kills that
    process too gets ``on_crash``.  The remaining tasks go on in a new pool.
    """
    results: list = [None] * len(tasks)
    queue = list(range(len(tasks)))
    suspects: list[int] = []
    ctx = _mp_context()

    def finish(i: int, value: Any) -> None:
        results[i] = value
        if progress:
            progress()

    while queue or suspects:
        if suspects:
            i = suspects.pop(0)
            try:
                with ProcessPoolExecutor(1, mp_context=ctx, initializer=_init_worker, initargs=init_args) as pool:
                    finish(i, pool.submit(fn, tasks[i]).result())
            except BrokenProcessPool:
                finish(i, on_crash(tasks[i], "worker process died"))
            continue
        workers = max(1, min(jobs, len(queue)))
        in_flight: dict = {}
        try:
            with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=init_args) as pool:
                while queue or in_flight:
                    while queue and len(in_flight) < workers * 2:
                        i = queue.pop(0)
                        in_flight[pool.submit(fn, tasks[i])] = i
                    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                    for fut in done:
                        value = fut.result()  # raises BrokenProcessPool if a worker died
                        finish(in_flight.pop(fut), value)
        except BrokenProcessPool:
            suspects.extend(sorted(in_flight.values()))
    return results


@dataclass
class RunOptions:
    jobs: int = 0  # 0: number of cores
    cache: Cache | None = None
    in_process: bool = False  # run without worker processes (LSP, tests)


@dataclass
class RunResult:
    outcomes: list[FileOutcome]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        out = [d for o in self.outcomes for d in o.diagnostics]
        return sorted(out, key=Diagnostic.sort_key)

    @property
    def files_checked(self) -> int:
        return len(self.outcomes)


def build_tasks(files: list[tuple[Path, Settings]]) -> list[CheckTask]:
    tasks = []
    for path, settings in files:
        tasks.append(CheckTask(
            path=path, filename=display_name(path), settings=settings,
            enabled=enabled_for(settings, settings.relpath(path)), module_name=module_name_for(path),
        ))
    return tasks


def run(tasks: list[CheckTask], options: RunOptions, progress: Callable[[], None] | None = None) -> RunResult:
    """Lint every task; the result holds one outcome per task, in task order."""
    cache = options.cache or Cache(Path("."), enabled=False)
    jobs = options.jobs or os.cpu_count() or 1
    in_process = options.in_process or len(tasks) == 0
    summary_tasks = [_SummaryTask(t.path, t.module_name) for t in tasks if t.path is not None and t.path.suffix == ".py"]

    if in_process:
        parts = [_summarize_task(t, cache) for t in summary_tasks]
    else:
        parts = _parallel(_worker_summary, summary_tasks, jobs, (ProjectIndex(), cache), lambda t, m: {})
    index = ProjectIndex.merge(parts)
    for t in tasks:  # in-memory buffers (stdin, editors) contribute to the index too
        if t.data is not None:
            index = _with_buffer(index, t)

    def crashed(task: CheckTask, message: str) -> FileOutcome:
        diag = problem("DTL005", task.filename, "the worker process analysing this file died, most likely a "
                       "native parser crash (e.g. on extremely deep nesting); the file was not analysed")
        return _fail(FileOutcome(task.filename), diag, task)

    if in_process:
        outcomes = []
        for t in tasks:
            outcomes.append(run_check_task(t, index, cache))
            if progress:
                progress()
    else:
        outcomes = _parallel(_worker_check, tasks, jobs, (index, cache), crashed, progress)
    return RunResult(outcomes)


def _with_buffer(index: ProjectIndex, task: CheckTask) -> ProjectIndex:
    try:
        text = SourceFile.from_bytes(task.data or b"").text
    except SourceError:
        return index
    return index_with_text(index, text, task.module_name, task.filename)


def index_with_text(index: ProjectIndex, text: str, module_name: str, filename: str) -> ProjectIndex:
    """``index`` plus the summaries of an in-memory text (it may differ from the file on disk)."""
    try:
        part = analysis.summarize(text, module_name, filename)
    except Exception:
        return index
    return ProjectIndex({**index.entries, **part}) if part else index


def buffer_task(text: str, filename: str, settings: Settings | None = None, index: ProjectIndex | None = None,
                path: Path | None = None) -> tuple[CheckTask, ProjectIndex]:
    """The task and project index for analysing an in-memory text in this process."""
    settings = settings or Settings(root=Path.cwd())
    module_name = module_name_for(path) if path else Path(filename).stem
    relpath = settings.relpath(path) if path else filename
    task = CheckTask(path=path, filename=filename, settings=settings,
                     enabled=enabled_for(settings, relpath), module_name=module_name)
    return task, index_with_text(index or ProjectIndex(), text, module_name, filename)


def lint_source(text: str, filename: str = "<stdin>", settings: Settings | None = None,
                index: ProjectIndex | None = None, path: Path | None = None) -> list[Diagnostic]:
    """Lint an in-memory source text in this process (editors, tests, stdin)."""
    task, index = buffer_task(text, filename, settings, index, path)
    outcome, _ = check_source(SourceFile.from_text(text), task, index)
    return outcome.diagnostics
