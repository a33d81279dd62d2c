"""Worker processes for the engine: run a function over tasks in parallel, surviving worker crashes.

Crash isolation matters where native code runs on user input: libcst's parser
(fixing) can overflow the C stack on pathological nesting and kill the process.
At most ``jobs`` tasks are in flight, so when a worker dies only those are
suspects: each is retried alone in a fresh process, and one that kills that
process too gets ``on_crash``.  The remaining tasks go on in a new pool.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable


def _mp_context():
    # fork hands the worker state (the project index) to the workers without pickling it
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def run_parallel(fn: Callable, tasks: list, jobs: int, initializer: Callable, init_args: tuple,
                 on_crash: Callable[[Any, str], Any], progress: Callable[[], None] | None = None) -> list:
    """``[fn(t) for t in tasks]`` in ``jobs`` worker processes set up by ``initializer(*init_args)``."""
    results: list = [None] * len(tasks)
    queue = list(range(len(tasks)))
    queue.reverse()  # pop() from the end takes tasks in order
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
                with ProcessPoolExecutor(1, mp_context=ctx, initializer=initializer, initargs=init_args) as pool:
                    finish(i, pool.submit(fn, tasks[i]).result())
            except BrokenProcessPool:
                finish(i, on_crash(tasks[i], "worker process died"))
            continue
        workers = max(1, min(jobs, len(queue)))
        in_flight: dict = {}
        try:
            with ProcessPoolExecutor(workers, mp_context=ctx, initializer=initializer, initargs=init_args) as pool:
                while queue or in_flight:
                    while queue and len(in_flight) < workers * 2:
                        i = queue.pop()
                        in_flight[pool.submit(fn, tasks[i])] = i
                    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                    for fut in done:
                        value = fut.result()  # raises BrokenProcessPool if a worker died
                        finish(in_flight.pop(fut), value)
        except BrokenProcessPool:
            suspects.extend(sorted(in_flight.values()))
    return results
