"""Running one command for the benchmark: wall time, CPU time and peak memory of each process.

The command's process tree is polled every few milliseconds for each process's
peak resident set (``VmHWM`` in ``/proc/PID/status``), so the figure for "the
largest worker" is a worker's own, not the sum.  CPU time is the command's and
its waited-for children's user + system time (``wait4``).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Sample:
    seconds: float
    cpu: float
    rc: int
    stdout: bytes = b""
    peak_kb: dict[int, int] = field(default_factory=dict)  # pid -> VmHWM
    root_pid: int = 0

    @property
    def main_mb(self) -> float:
        return self.peak_kb.get(self.root_pid, 0) / 1024

    @property
    def worker_mb(self) -> float:
        """The largest peak among the command's child processes (its workers); 0 when it had none."""
        others = [kb for pid, kb in self.peak_kb.items() if pid != self.root_pid]
        return max(others, default=0) / 1024

    @property
    def workers(self) -> int:
        return len(self.peak_kb) - 1 if self.peak_kb else 0


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _hwm(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def run(cmd: list[str], cwd: Path | None = None, env: dict | None = None, stdin: bytes | None = None,
        poll: float = 0.005) -> Sample:
    peaks: dict[int, int] = {}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            stack = [proc.pid]
            while stack:
                pid = stack.pop()
                kb = _hwm(pid)
                if kb is not None:
                    peaks[pid] = max(kb, peaks.get(pid, 0))
                stack.extend(_children(pid))
            done.wait(poll)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out_chunks = []
    if stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
    while True:
        chunk = proc.stdout.read(1 << 16)
        if not chunk:
            break
        out_chunks.append(chunk)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    watcher.join()
    peaks.setdefault(proc.pid, usage.ru_maxrss)
    return Sample(seconds, usage.ru_utime + usage.ru_stime, proc.returncode, b"".join(out_chunks), peaks, proc.pid)


def best(cmd: list[str], repeat: int, **kw) -> Sample:
    """The fastest of ``repeat`` runs (the one least disturbed by other work on the machine)."""
    samples = [run(cmd, **kw) for _ in range(max(1, repeat))]
    return min(samples, key=lambda s: s.seconds)
