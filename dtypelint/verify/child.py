"""The child process that verifies one module: memory limit, quiet output, results over a pipe.

It runs the user's code, so it is a separate process: a hang is killed by the parent at the
time limit, a crash or an exhausted memory limit ends only this process, and whatever it
sent before still counts.
"""

from __future__ import annotations

import os
import sys

MEMORY_EXIT = 3  # the child ran out of its memory limit outside a run


def limit_memory(megabytes: int) -> None:
    """Cap the address space (``RLIMIT_AS``) of this process, where the platform supports it."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return
    limit = int(megabytes) * 1024 * 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        pass


def _quiet() -> None:
    """The project's prints and library warnings would garble the report: send them to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        try:
            os.dup2(devnull, fd)
        except OSError:
            pass
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import warnings

    warnings.simplefilter("ignore")


def main(job, conn, quiet: bool = True) -> None:
    """Entry point of the child: verify ``job`` and send each result (a dict) over ``conn``."""
    sys.dont_write_bytecode = True  # never leave __pycache__ files in the user's tree
    import faulthandler

    faulthandler.disable()  # a crash of the user's code is reported by the parent, not dumped on its terminal
    if quiet:
        _quiet()
    limit_memory(job.memory_mb)
    try:
        import torch

        # one thread: modules run in parallel processes, and a forked child must not use the OpenMP pool of a
        # parent that ran ops (the tests) -- GNU OpenMP is not fork-safe
        torch.set_num_threads(1)
        from dtypelint.verify.session import verify_job

        for result in verify_job(job):
            conn.send(result.to_json())
    except MemoryError:
        os._exit(MEMORY_EXIT)
    finally:
        try:
            conn.close()
        except OSError:
            pass
