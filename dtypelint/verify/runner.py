"""Run module jobs in child processes, in parallel, each with a time and a memory limit.

On Linux the children are forked from this process after it imported torch once, so a
child starts in milliseconds; elsewhere (and for CUDA, which must not be forked) they are
spawned.  A child that runs past its time limit is killed; one that crashes or runs out of
memory ends alone.  The findings it had not reported become ``not-run`` with the reason.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from multiprocessing.connection import wait
from typing import Callable

from dtypelint.verify.child import MEMORY_EXIT, main as child_main
from dtypelint.verify.jobs import ModuleJob
from dtypelint.verify.results import VerifyResult


def _context(device: str):
    methods = multiprocessing.get_all_start_methods()
    if device != "cuda" and "fork" in methods:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _expected(job: ModuleJob) -> list[tuple[int, str]]:
    return [(f.key, r) for f in job.findings for r in job.regimes.get(f.key, f.regimes)]


def _why(exitcode: int | None, job: ModuleJob) -> str:
    if exitcode == MEMORY_EXIT:
        return f"the module exhausted the memory limit ({job.memory_mb} MiB)"
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if name == "SIGKILL":
            return "the process running the module was killed (SIGKILL), most likely out of memory"
        return f"the interpreter running the module crashed ({name})"
    return f"the process running the module exited with status {exitcode} before it finished"


def _missing(job: ModuleJob, got: set, why: str) -> list[VerifyResult]:
    by_key = {f.key: f for f in job.findings}
    out = []
    for key, regime in _expected(job):
        if (key, regime) in got:
            continue
        f = by_key[key]
        device = "fake-cuda" if (regime == "autocast" and job.device == "cpu") else job.device
        out.append(VerifyResult(f.code, f.filename, f.row, f.column, regime, status="not-run", device=device,
                                detail=why))
    return out


def run_jobs(jobs: list[ModuleJob], parallel: int, device: str = "cpu",
             on_result: Callable[[VerifyResult], None] | None = None, quiet: bool = True) -> list[VerifyResult]:
    """Verify every job; results in completion order (``on_result`` sees each as it arrives)."""
    ctx = _context(device)
    pending = list(jobs)
    active: dict = {}  # connection -> [process, job, deadline, received keys]
    results: list[VerifyResult] = []

    def emit(r: VerifyResult) -> None:
        results.append(r)
        if on_result:
            on_result(r)

    def finish(conn, why: str | None) -> None:
        proc, job, _deadline, got = active.pop(conn)
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        conn.close()
        if why is None and _expected_done(job, got):
            return
        for r in _missing(job, got, why or _why(proc.exitcode, job)):
            emit(r)

    while pending or active:
        while pending and len(active) < max(1, parallel):
            job = pending.pop(0)
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=child_main, args=(job, writer, quiet), daemon=True)
            proc.start()
            writer.close()
            active[reader] = [proc, job, time.monotonic() + job.timeout, set()]
        now = time.monotonic()
        nearest = min(entry[2] for entry in active.values())
        ready = wait(list(active), timeout=max(0.0, nearest - now))
        for conn in ready:
            try:
                data = conn.recv()
            except (EOFError, OSError):
                proc = active[conn][0]
                proc.join(5)
                finish(conn, None if proc.exitcode == 0 else _why(proc.exitcode, active[conn][1]))
                continue
            r = VerifyResult.from_json(data)
            entry = active[conn]
            key = next((f.key for f in entry[1].findings if (f.row, f.column, f.code) == (r.row, r.column, r.code)), None)
            entry[3].add((key, r.regime))
            emit(r)
        now = time.monotonic()
        for conn in [c for c, entry in active.items() if entry[2] <= now]:
            finish(conn, f"timed out after {active[conn][1].timeout:g} s (the module hangs or is too slow; "
                         "raise [tool.dtypelint.verify] timeout or --timeout)")
    return results


def _expected_done(job: ModuleJob, got: set) -> bool:
    return set(_expected(job)) <= got
