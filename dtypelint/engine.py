"""The per-file pipeline and the run over a repository.

For each file: read bytes -> source view (``.py``, ``.ipynb``: :mod:`dtypelint.source`)
-> text prefilter -> parse once with CPython's ``ast`` (:mod:`dtypelint.parse`) ->
analysis -> selection -> suppressions -> positions mapped back to the file.

Phase 1 summarises every file for the project index (cached on content); phase 2
analyses each file against the merged index (cached on content + settings + the
index entries it read).  Cache hits are answered in this process; the rest runs
here when it is small or ``-j 1``, else in worker processes (:mod:`dtypelint.pool`).
Where one process runs both phases, a file is parsed once for both.

Fixing is not the engine's business: a task may carry a fix step (a callable,
e.g. :class:`dtypelint.fixer.run.FileFixer`), which the worker calls after checking
the file, handing it the file's source view and a ``lint`` function.  Fix steps
always run in worker processes: libcst's native parser can crash on pathological
input, and only that worker dies.  Nothing here prints; reporters do that.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

from dtypelint import analysis
from dtypelint.cache import Cache, check_key, content_key
from dtypelint.catalog import load_catalog
from dtypelint.config import Settings
from dtypelint.context import CheckContext, module_name_for
from dtypelint.diagnostics import Diagnostic
from dtypelint.index import ProjectIndex
from dtypelint.parse import ParseFailure, parse_module
from dtypelint.problems import problem
from dtypelint.source import SourceError, SourceFile, SourceView, load_source
from dtypelint.suppressions import parse_suppressions

__all__ = [
    "CheckTask", "FileOutcome", "FixStep", "RunOptions", "RunResult", "buffer_task", "build_tasks", "check_source",
    "display_name", "enabled_for", "index_with_text", "known_codes", "lint_source", "problem", "run",
    "run_check_task",
]

# Runs whose files add up to less than this are analysed in this process: starting workers costs more.
IN_PROCESS_BYTES = 256 * 1024
# The cyclic garbage collector's first threshold during a run (CPython's default is 700).  Parsing and
# the analysis allocate millions of short-lived objects next to a large, long-lived project index and
# parse trees; with the default, collections scanning those cost about a third of a cold run.
GC_THRESHOLD = 50_000


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


_SOURCE_ERROR_CODES = {"binary": "DTL003", "decode": "DTL002"}


@dataclass
class FileOutcome:
    """What linting one file produced."""

    filename: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    parsed: bool = False  # False: skipped by the prefilter, or could not be analysed
    failed: bool = False  # a DTL0xx problem
    fix: Any = None  # what the task's fix step reports (dtypelint.fixer.FixReport)


Lint = Callable[[SourceFile], list[Diagnostic]]


class FixStep(Protocol):
    """Fixes one checked file inside the worker and returns its final outcome.

    ``view`` is the file as code (:class:`SourceView`), ``data`` its bytes as checked,
    ``lint`` analyses a changed copy of ``view.code`` with the same project index."""

    def __call__(self, task: "CheckTask", data: bytes, view: SourceView, outcome: FileOutcome,
                 lint: Lint) -> FileOutcome: ...


@dataclass
class CheckTask:
    path: Path | None
    filename: str
    settings: Settings
    enabled: frozenset[str]
    data: bytes | None = None  # stdin / in-memory buffers
    module_name: str = ""
    fix: FixStep | None = None  # called after checking (--fix, --diff); must be picklable


# -- phase 1: summaries ----------------------------------------------------------------


@dataclass
class _SummaryTask:
    path: Path
    module_name: str


def _summarize_task(task: _SummaryTask, contents: dict[Path, str]) -> dict[str, Any]:
    """The file's project-index entries.  They are its decoded source (other files read its classes,
    helpers and kernels from it, parsing it only if they need it), so phase 1 only reads, decodes and
    hashes each file, in this process (sending sources back from workers would cost more)."""
    try:
        data = task.path.read_bytes()
    except OSError:
        return {}
    contents[task.path] = content_key(data)
    try:
        text = SourceFile.from_bytes(data).text
        return analysis.summarize(text, task.module_name, str(task.path))
    except (SourceError, ValueError, MemoryError):
        return {}
    except Exception:  # a bug in summaries must not stop the run; phase 2 reports files
        return {}


# -- phase 2: checks -------------------------------------------------------------------


def analyse_text(source: SourceFile, task: CheckTask, index: ProjectIndex,
                 tree: ast.Module | None = None) -> tuple[list[Diagnostic], dict[str, str], bool]:
    """Prefilter, parse (unless ``tree`` is given) and analyse decoded text. Returns (diagnostics, index deps, parsed)."""
    text = source.text
    if "skip-file" in text and parse_suppressions(text).skip_file:
        return [], {}, False
    if not analysis.might_contain_hazard(text, task.settings):
        return [], {}, False
    if tree is None:
        try:
            tree = parse_module(text, task.filename)
        except ParseFailure as exc:
            return _select([exc.diagnostic], task, text), {}, False
    view = index.view()
    ctx = CheckContext(
        filename=task.filename, path=task.path, module_name=task.module_name, source=source,
        tree=tree, settings=task.settings, enabled=task.enabled, index=view,
    )
    from dtypelint import rules

    diags = rules.check(ctx)
    return _select(diags, task, text), view.dependencies(), True


def _select(diags: Iterable[Diagnostic], task: CheckTask, text: str) -> list[Diagnostic]:
    """Keep enabled, unsuppressed findings; comments are only tokenized when there is a finding."""
    out = [d for d in diags if d.code in task.enabled]
    if out:
        sup = parse_suppressions(text)
        out = [d for d in out if not sup.suppresses(d.code, d.start.row)]
    return sorted(out, key=Diagnostic.sort_key)


def check_source(source: SourceFile, task: CheckTask, index: ProjectIndex,
                 tree: ast.Module | None = None) -> tuple[FileOutcome, dict[str, str] | None]:
    """Analyse decoded Python source; an exception in dtypelint becomes a DTL005 on this file."""
    out = FileOutcome(task.filename)
    try:
        diags, deps, parsed = analyse_text(source, task, index, tree)
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


def _suffix(task: CheckTask) -> str:
    return (task.path or Path(task.filename)).suffix


def _check_key(task: CheckTask, content: str) -> str:
    return check_key(content, task.settings.analysis_fingerprint(), task.enabled, task.filename)


def _cached_outcome(task: CheckTask, key: str, index: ProjectIndex, cache: Cache) -> FileOutcome | None:
    cached = cache.get("check", key)
    if cached is None or not index.digest_of(cached["deps"]):
        return None
    out = FileOutcome(task.filename)
    out.diagnostics = [Diagnostic.from_json(d) for d in cached["diagnostics"]]
    out.parsed = cached["parsed"]
    out.failed = cached["failed"]
    return out


def _check_bytes(task: CheckTask, data: bytes, index: ProjectIndex, cache: Cache) -> tuple[FileOutcome, SourceView | None]:
    content = content_key(data)
    key = _check_key(task, content)
    cached = _cached_outcome(task, key, index, cache)
    if cached is not None:
        return cached, None
    try:
        view = load_source(data, _suffix(task))
    except SourceError as exc:
        code = _SOURCE_ERROR_CODES.get(exc.kind, "DTL002")
        return _fail(FileOutcome(task.filename), problem(code, task.filename, exc.message, row=exc.row), task), None
    out, deps = check_source(view.code, task, index)
    out.diagnostics = [view.to_file(d) for d in out.diagnostics]
    if deps is not None:  # internal failures are not cached: the next run tries again
        cache.put("check", key, {
            "deps": deps, "parsed": out.parsed, "failed": out.failed,
            "diagnostics": [d.to_json() for d in out.diagnostics],
        })
    return out, view


def run_check_task(task: CheckTask, index: ProjectIndex, cache: Cache) -> FileOutcome:
    """Lint one file (and hand it to the task's fix step); never raises for a problem with the file itself."""
    data = task.data
    if data is None:
        assert task.path is not None
        try:
            data = task.path.read_bytes()
        except OSError as exc:
            return _fail(FileOutcome(task.filename),
                         problem("DTL004", task.filename, f"cannot read file: {exc.strerror or exc}"), task)
    out, view = _check_bytes(task, data, index, cache)
    analysis.trim_caches()
    if task.fix is None or out.failed:
        return out
    if view is None:  # a cache hit: the fixer needs the source
        try:
            view = load_source(data, _suffix(task))
        except SourceError:
            return out

    def lint(src: SourceFile) -> list[Diagnostic]:
        outcome, _ = check_source(src, task, index)
        return outcome.diagnostics

    return task.fix(task, data, view, out, lint)


def _fail(out: FileOutcome, diag: Diagnostic, task: CheckTask) -> FileOutcome:
    out.failed = True
    if diag.code in task.enabled:
        out.diagnostics = [diag]
    return out


# -- worker plumbing -------------------------------------------------------------------

_WORKER_STATE: dict[str, Any] = {}


@contextlib.contextmanager
def _collector_tuned(frozen: bool = False):
    """Collect garbage less often (see ``GC_THRESHOLD``); ``frozen``: the run may ``gc.freeze()``, undone at the end."""
    before = gc.get_threshold()
    gc.set_threshold(max(GC_THRESHOLD, before[0]), before[1], before[2])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if frozen:
            gc.unfreeze()


def _init_worker(index: ProjectIndex, cache: Cache) -> None:
    _WORKER_STATE["index"] = index
    _WORKER_STATE["cache"] = cache


def _worker_check(task: CheckTask) -> FileOutcome:
    return run_check_task(task, _WORKER_STATE["index"], _WORKER_STATE["cache"])


@dataclass
class RunOptions:
    jobs: int = 0  # 0: number of cores
    cache: Cache | None = None
    in_process: bool = False  # run without worker processes (LSP, tests; fix steps lose crash isolation)


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
    codes = known_codes()
    for path, settings in files:
        tasks.append(CheckTask(
            path=path, filename=display_name(path), settings=settings,
            enabled=settings.enabled_codes(codes, settings.relpath(path)), module_name=module_name_for(path),
        ))
    return tasks


def _size(task: CheckTask) -> int:
    if task.data is not None:
        return len(task.data)
    try:
        return task.path.stat().st_size if task.path is not None else 0
    except OSError:
        return 0


def _in_parallel(indices: list[int], sizes: list[int], fn: Callable, tasks: list, jobs: int, init_args: tuple,
                 on_crash: Callable, progress: Callable[[], None] | None) -> dict[int, Any]:
    """Run ``fn`` over ``tasks[i]`` for ``indices`` in workers, biggest first (the last file to finish is small)."""
    from dtypelint.pool import run_parallel  # not imported for runs that need no worker (start-up time)

    order = sorted(indices, key=lambda i: -sizes[i])
    results = run_parallel(fn, [tasks[i] for i in order], jobs, _init_worker, init_args, on_crash, progress)
    return dict(zip(order, results))


def run(tasks: list[CheckTask], options: RunOptions, progress: Callable[[], None] | None = None) -> RunResult:
    """Lint every task; the result holds one outcome per task, in task order."""
    with _collector_tuned(frozen=True):
        return _run(tasks, options, progress)


def _run(tasks: list[CheckTask], options: RunOptions, progress: Callable[[], None] | None) -> RunResult:
    cache = options.cache or Cache(Path("."), enabled=False)
    jobs = options.jobs or os.cpu_count() or 1
    sizes = [_size(t) for t in tasks]
    fixing = any(t.fix is not None for t in tasks)
    in_process = options.in_process or not tasks or (
        not fixing and (jobs == 1 or sum(sizes) < IN_PROCESS_BYTES))

    # phase 1: summaries of every .py file on disk (in-memory buffers are summarised below)
    summary_tasks = [_SummaryTask(t.path, t.module_name) for t in tasks
                     if t.path is not None and t.data is None and t.path.suffix == ".py"]
    contents: dict[Path, str] = {}  # content keys read here, for the cache lookups of phase 2
    parts = [_summarize_task(t, contents) for t in summary_tasks]
    index = ProjectIndex.merge(parts)
    for t in tasks:  # in-memory buffers (stdin, editors) contribute to the index too
        if t.data is not None:
            index = _with_buffer(index, t)
    # The index lives until the end of the run: the collector need not scan it again, and forked
    # workers do not touch (and so copy) its pages when they collect.
    gc.freeze()

    # phase 2: checks; cache hits are answered here, without a worker
    outcomes: list[FileOutcome | None] = [None] * len(tasks)
    todo = []
    for i, t in enumerate(tasks):
        hit = None
        if not in_process and t.fix is None and t.path is not None and t.data is None and cache.enabled:
            try:
                content = contents.get(t.path) or content_key(t.path.read_bytes())
                hit = _cached_outcome(t, _check_key(t, content), index, cache)
            except OSError:
                hit = None
        if hit is not None:
            outcomes[i] = hit
            if progress:
                progress()
        else:
            todo.append(i)

    def crashed(task: CheckTask, message: str) -> FileOutcome:
        diag = problem("DTL005", task.filename, "the worker process analysing this file died, most likely a "
                       "native parser crash (e.g. on extremely deep nesting); the file was not analysed")
        return _fail(FileOutcome(task.filename), diag, task)

    if in_process:
        for i in todo:
            outcomes[i] = run_check_task(tasks[i], index, cache)
            if progress:
                progress()
    elif todo:
        done = _in_parallel(todo, sizes, _worker_check, tasks, jobs, (index, cache), crashed, progress)
        for i, out in done.items():
            outcomes[i] = out
    return RunResult([o for o in outcomes if o is not None])


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _with_buffer(index: ProjectIndex, task: CheckTask) -> ProjectIndex:
    try:
        view = load_source(task.data or b"", _suffix(task))
    except SourceError:
        return index
    if _suffix(task) != ".py":
        return index
    return index_with_text(index, view.code.text, task.module_name, task.filename)


def index_with_text(index: ProjectIndex, text: str, module_name: str, filename: str,
                    tree: ast.Module | None = None) -> ProjectIndex:
    """``index`` plus the summaries of an in-memory text (it may differ from the file on disk)."""
    try:
        part = analysis.summarize(text, module_name, filename, tree=tree)
    except Exception:
        return index
    return ProjectIndex({**index.entries, **part}) if part else index


def buffer_task(text: str, filename: str, settings: Settings | None = None, index: ProjectIndex | None = None,
                path: Path | None = None, tree: ast.Module | None = None) -> tuple[CheckTask, ProjectIndex]:
    """The task and project index for analysing an in-memory text in this process (``tree``: its parse, if known)."""
    settings = settings or Settings(root=Path.cwd())
    module_name = module_name_for(path) if path else Path(filename).stem
    relpath = settings.relpath(path) if path else filename
    task = CheckTask(path=path, filename=filename, settings=settings,
                     enabled=enabled_for(settings, relpath), module_name=module_name)
    return task, index_with_text(index or ProjectIndex(), text, module_name, filename, tree)


def lint_source(text: str, filename: str = "<stdin>", settings: Settings | None = None,
                index: ProjectIndex | None = None, path: Path | None = None) -> list[Diagnostic]:
    """Lint an in-memory source text in this process (editors, tests, stdin); the text is parsed once."""
    with _collector_tuned():
        tree = None
        try:
            tree = parse_module(text, filename)
        except ParseFailure:
            pass  # check_source reports it (unless the prefilter skips the text)
        task, index = buffer_task(text, filename, settings, index, path, tree)
        outcome, _ = check_source(SourceFile.from_text(text), task, index, tree)
        return outcome.diagnostics
