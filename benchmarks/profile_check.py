"""Where a cold `dtypelint check` spends its time, by pipeline stage, and the analysis' hot functions.

Usage::

    python benchmarks/profile_check.py [--cprofile] [PATH ...]   # default: the benchmark's timm corpus

Runs the engine in this process (``-j 1``, no cache) twice: once with light CPU-time timers (``time.process_time``: a busy machine does not inflate them)
around each stage (read, decode, parse, phase-1 summaries, phase-2 analysis,
selection and suppressions, reporting), once under cProfile for the functions that
dominate the analysis.  Start-up (imports) and worker start/IPC are measured from
outside: ``python -X importtime -m dtypelint --version`` and the difference between
``-j 2`` and half of ``-j 1`` in ``bench_check.py``.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from dtypelint import analysis, engine  # noqa: E402
from dtypelint.config import Settings  # noqa: E402
from dtypelint.reporters import REPORTERS, Report  # noqa: E402

TOTALS: dict[str, float] = defaultdict(float)
_ACTIVE: list[str] = []


def timed(stage: str, fn):
    """``fn`` with its time (less the time of nested timed stages) added to ``TOTALS[stage]``."""
    def wrapper(*args, **kwargs):
        _ACTIVE.append(stage)
        t = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            dt = time.process_time() - t
            _ACTIVE.pop()
            TOTALS[stage] += dt
            if _ACTIVE:
                TOTALS[_ACTIVE[-1]] -= dt
    return wrapper


def tasks_for(paths: list[Path]):
    files = [(p, Settings(root=p.parent)) for root in paths for p in sorted(root.rglob("*.py"))]
    return engine.build_tasks(files)


def stages(paths: list[Path]) -> None:
    from dtypelint import source as source_pkg
    from dtypelint.source import python as source_python

    real_read = Path.read_bytes
    Path.read_bytes = timed("read", real_read)
    source_python.SourceFile.from_bytes = classmethod(timed("decode", source_python.SourceFile.from_bytes.__func__))
    engine.load_source = timed("decode", source_pkg.load_source)
    engine.parse_module = timed("parse (ast)", engine.parse_module)
    engine.analysis = type(sys)("analysis_proxy")
    engine.analysis.might_contain_hazard = timed("prefilter", analysis.might_contain_hazard)
    engine.analysis.summarize = timed("phase 1: summaries", analysis.summarize)
    from dtypelint import rules

    rules.check = timed("phase 2: analysis and rules", rules.check)
    engine._select = timed("selection + suppressions", engine._select)
    engine.ProjectIndex.merge = classmethod(timed("index merge", engine.ProjectIndex.merge.__func__))
    tasks = tasks_for(paths)
    t = time.process_time()
    result = engine.run(tasks, engine.RunOptions(jobs=1, in_process=True))
    total_run = time.process_time() - t
    t = time.process_time()
    buf = io.StringIO()
    REPORTERS["json"](Report(diagnostics=result.diagnostics, files_checked=len(tasks)), buf, False)
    REPORTERS["full"](Report(diagnostics=result.diagnostics, files_checked=len(tasks)), io.StringIO(), False)
    TOTALS["reporting (json + full)"] += time.process_time() - t
    Path.read_bytes = real_read
    accounted = sum(v for k, v in TOTALS.items() if not k.startswith("reporting"))
    TOTALS["engine (the rest)"] = total_run - accounted
    grand = sum(TOTALS.values())
    print(f"{len(tasks)} files, {len(result.diagnostics)} findings; in-process run {total_run:.2f} s\n")
    print(f"{'stage':<28} {'seconds':>8} {'share':>7}")
    for stage, secs in sorted(TOTALS.items(), key=lambda kv: -kv[1]):
        print(f"{stage:<28} {secs:>8.2f} {secs / grand:>6.0%}")


def hot_functions(paths: list[Path], top: int = 30) -> None:
    tasks = tasks_for(paths)
    prof = cProfile.Profile()
    prof.enable()
    engine.run(tasks, engine.RunOptions(jobs=1, in_process=True))
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:12000])
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[:12000])


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--cprofile"]
    roots = [Path(p).resolve() for p in args] or [REPO / "corpus" / "timm" / "timm"]
    if "--cprofile" in sys.argv:
        hot_functions(roots)
    else:
        stages(roots)
