"""Child processes: a module that hangs, crashes or exhausts memory is ``not-run`` with the reason,
and the other modules still run (in parallel)."""

from __future__ import annotations

import sys
import time

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, __import__("os").path.dirname(__file__))
from test_verify_session import finding, write  # noqa: E402

from dtypelint.verify.jobs import FindingRef, ModuleJob, module_of  # noqa: E402
from dtypelint.verify.runner import run_jobs  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process limits")

TEMPLATE = '''
import os
import signal
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        {body}
        return self.proj(x.float())  # SINK
'''

BODIES = {
    "good": "pass",
    "hang": "while True: pass",
    "crash": "os.kill(os.getpid(), signal.SIGSEGV)",
    "memory": "torch.empty(2 ** 31)  # 8 GiB of address space",
}


def job_for(tmp_path, name: str, timeout: float = 60, memory_mb: int = 4096) -> ModuleJob:
    path = write(tmp_path, {f"{name}.py": TEMPLATE.replace("{body}", BODIES[name])}) / f"{name}.py"
    d = finding(path, "SINK", replace=("x.float()", "x"))
    ref = FindingRef.of(0, d, path)
    module, root = module_of(path)
    return ModuleJob(str(path), str(path), module, str(root), str(root), [ref], {0: ("half",)}, [ref],
                     timeout=timeout, memory_mb=memory_mb)


def test_hang_crash_and_memory_end_only_their_own_module(tmp_path):
    jobs = [job_for(tmp_path, "hang", timeout=8), job_for(tmp_path, "crash"), job_for(tmp_path, "good"),
            job_for(tmp_path, "memory", memory_mb=6144)]
    started = time.monotonic()
    results = {r.filename.rsplit("/", 1)[-1]: r for r in run_jobs(jobs, parallel=2)}
    assert time.monotonic() - started < 120
    assert results["good.py"].status == "reproduced" and results["good.py"].fixed is True
    assert results["hang.py"].status == "not-run" and "timed out after 8 s" in results["hang.py"].detail
    assert results["crash.py"].status == "not-run" and "crashed (SIGSEGV)" in results["crash.py"].detail
    mem = results["memory.py"]
    assert mem.status == "not-run" and "exhausted the memory limit (6144 MiB)" in mem.detail, mem.detail


def test_the_memory_limit_is_what_stops_the_allocation(tmp_path):
    """The same 8 GiB reservation (never touched) succeeds without the limit: the limit is real."""
    job = job_for(tmp_path, "memory", memory_mb=1 << 20)
    [r] = run_jobs([job], parallel=1)
    assert r.status == "reproduced", r.detail
