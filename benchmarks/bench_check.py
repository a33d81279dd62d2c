"""How fast is dtypelint, next to the parse floor and the peer linters, on real model code.

One command, from a fresh clone (after the README's install)::

    python benchmarks/bench_check.py

It fetches the corpus (pinned wheels from PyPI: timm 1.0.31, the ``models`` trees of
transformers 5.23.0 and diffusers 0.42.1) into ``corpus/`` (git-ignored), installs the
peers (ruff, TorchFix, Fixit; no torch) into ``corpus/peers-venv``, and measures, in
one run on the same files and cores: the ``ast`` parse floor (1 and 2 processes), ruff,
dtypelint cold (``-j 1``, ``-j 2``) and warm, 2x and 4x copies of timm, TorchFix and
Fixit, one ~2,000-line modeling file in-process (what the editor path costs), one
small file as a whole process (a pre-commit run), an editor session through a real
LSP client on a ~2,400-line file, peak memory per process, and the whole corpus.
It prints a table with ratios and the targets, and writes ``docs/performance.md``.

Options: ``--quick`` (timm only: no peers, no copies, no whole corpus),
``--no-peers``, ``--repeat N`` (best of N for the short commands), ``--wheels DIR``
(use wheels found there before downloading), ``--dtypelint-src DIR`` (measure
another checkout, e.g. the commit before a change), ``--no-write``.
Figures are printed, not asserted: this is not a test.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpus_mod  # noqa: E402
import measure  # noqa: E402
from lsp_client import time_editor_session  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PEERS = ("ruff==0.17.6", "TorchFix==0.7.0", "fixit==2.2.1")
# (corpus tree, path below it)
MODEL_2000 = ("transformers-models", "wav2vec2/modeling_wav2vec2.py")  # 2,027 lines
MODEL_2400 = ("transformers-models", "bigbird_pegasus/modeling_bigbird_pegasus.py")  # 2,388 lines
SMALL_FILE = ("timm", "layers/split_attn.py")  # 112 lines

AST_FLOOR = r"""
import ast, sys, pathlib
from multiprocessing import Pool

def parse(path):
    data = pathlib.Path(path).read_bytes()
    try:
        compile(data, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    return 0

if __name__ == "__main__":
    jobs = int(sys.argv[1])
    files = sorted((str(p) for root in sys.argv[2:] for p in pathlib.Path(root).rglob("*.py")),
                   key=lambda p: -pathlib.Path(p).stat().st_size)
    if jobs == 1:
        for f in files:
            parse(f)
    else:
        with Pool(jobs) as pool:
            for _ in pool.imap_unordered(parse, files, chunksize=4):
                pass
"""

IN_PROCESS = r"""
import json, statistics, sys, time
from pathlib import Path
t0 = time.perf_counter()
from dtypelint.engine import lint_source
t1 = time.perf_counter()
path = Path(sys.argv[1])
text = path.read_text(encoding="utf-8")
first_start = time.perf_counter()
diags = lint_source(text, str(path))
first = time.perf_counter() - first_start
runs, cpu = [], []
for _ in range(int(sys.argv[2])):
    t, c = time.perf_counter(), time.process_time()
    lint_source(text, str(path))
    runs.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
print(json.dumps({"import": t1 - t0, "first": first, "median": statistics.median(runs),
                  "cpu": statistics.median(cpu), "findings": len(diags)}))
"""


@dataclass
class Row:
    label: str
    seconds: float
    cpu: float | None = None
    lines: int | None = None
    worker_mb: float | None = None
    main_mb: float | None = None
    note: str = ""
    ratio: str = ""


def machine() -> str:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_kb = int(next(l for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal")).split()[1])
        mem = f"{mem_kb / 1024 / 1024:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        mem = "?"
    return f"{cpu}, {os.cpu_count()} cores, {mem}; {platform.system()} {platform.release()}; Python {platform.python_version()}"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def ensure_peers(venv: Path) -> Path:
    bin_ = venv / "bin"
    if not (bin_ / "fixit").exists() or not (bin_ / "torchfix").exists() or not (bin_ / "ruff").exists():
        print(f"installing {' '.join(PEERS)} into {venv} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(bin_ / "python"), "-m", "pip", "install", "-q", *PEERS], check=True)
    has_torch = subprocess.run([str(bin_ / "python"), "-c", "import torch"], capture_output=True).returncode == 0
    if has_torch:
        print("warning: torch is installed in the peers' virtualenv", file=sys.stderr)
    return bin_


def findings(sample: measure.Sample) -> str:
    try:
        diags = json.loads(sample.stdout or b"[]")
    except ValueError:
        return f"rc={sample.rc}"
    problems = sum(1 for d in diags if d["code"].startswith("DTL0"))
    return f"{len(diags)} findings" + (f" ({problems} DTL0xx)" if problems else "")


def fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 1 else f"{x:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus-dir", type=Path, default=REPO / "corpus")
    ap.add_argument("--wheels", type=Path, action="append", default=[])
    ap.add_argument("--dtypelint-src", type=Path, default=REPO)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--output", type=Path, default=REPO / "docs" / "performance.md")
    ap.add_argument("--label", help="how the measured checkout is named in the page (default: its git commit)")
    args = ap.parse_args()

    root = args.corpus_dir.resolve()
    trees = corpus_mod.ensure(root, [w.resolve() for w in args.wheels])
    timm = trees["timm"]
    whole = [trees["transformers-models"], trees["diffusers-models"], timm]
    peers = None if (args.quick or args.no_peers) else ensure_peers(root / "peers-venv")
    src = args.dtypelint_src.resolve()
    env = {**os.environ, "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("DTYPELINT_CACHE_DIR", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users run from compiled bytecode, as pip installs it
    py = sys.executable
    subprocess.run([py, "-m", "compileall", "-q", str(src / "dtypelint")], env=env, check=False)
    commit = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    n_files, n_lines = corpus_mod.count([timm])
    started_load = load()
    print(f"machine: {machine()}; load {started_load}")
    print(f"dtypelint: {src} ({commit}); corpus: timm 1.0.31, {n_files} files, {n_lines} lines\n")

    rows: list[Row] = []
    work = Path(tempfile.mkdtemp(prefix="dtl-bench-"))
    dtl = [py, "-m", "dtypelint", "check", "--exit-zero", "--output-format", "json", "--isolated"]

    def timed(label: str, cmd: list[str], lines: int | None, repeat: int = 1, note: str = "", **kw) -> measure.Sample:
        s = measure.best(cmd, repeat, env=env, cwd=work, **kw)
        row = Row(label, s.seconds, s.cpu, lines, s.worker_mb if s.workers else None, s.main_mb, note)
        if "dtypelint" in label and not note:
            row.note = findings(s)
        rows.append(row)
        print(f"  {label:<52} {fmt_s(s.seconds):>8} s  cpu {fmt_s(s.cpu):>7} s  {row.note}", flush=True)
        return s

    print("timm:")
    floor1 = timed("ast.parse floor, 1 process", [py, "-c", AST_FLOOR, "1", str(timm)], n_lines, args.repeat)
    floor2 = timed("ast.parse floor, 2 processes", [py, "-c", AST_FLOOR, "2", str(timm)], n_lines, args.repeat)
    ruff = None
    if peers:
        ruff = timed("ruff check (default rules, no cache)", [str(peers / "ruff"), "check", "--no-cache",
                     "--exit-zero", "--isolated", "--quiet", str(timm)], n_lines, args.repeat, note="no dtype analysis")
    cold1 = timed("dtypelint cold, -j 1", [*dtl, "--no-cache", "-j", "1", str(timm)], n_lines)
    cold2 = timed("dtypelint cold, -j 2", [*dtl, "--no-cache", "-j", "2", str(timm)], n_lines)
    cache_dir = work / "cache"
    measure.run([*dtl, "--cache-dir", str(cache_dir), "-j", "2", str(timm)], env=env, cwd=work)  # fill the cache
    warm = timed("dtypelint warm (cache), -j 2", [*dtl, "--cache-dir", str(cache_dir), "-j", "2", str(timm)],
                 n_lines, args.repeat)
    scale: dict[int, measure.Sample] = {1: cold2}
    if not args.quick:
        for times in (2, 4):
            folder = corpus_mod.scaled(root, timm, times)
            scale[times] = timed(f"dtypelint cold, -j 2, timm x{times} ({n_lines * times} lines)",
                                 [*dtl, "--no-cache", "-j", "2", str(folder)], n_lines * times)
    torchfix = fixit = None
    if peers:
        torchfix = timed("TorchFix (all rules)", [str(peers / "torchfix"), "--select", "ALL", str(timm)], n_lines,
                         note="libcst + qualified names")
        fixit = timed("Fixit lint (built-in rules)", [str(peers / "fixit"), "lint", str(timm)], n_lines,
                      note="libcst")

    print("one file:")
    model = trees[MODEL_2000[0]] / MODEL_2000[1]
    model_lines = model.read_bytes().count(b"\n")
    s = measure.run([py, "-c", IN_PROCESS, str(model), "5"], env=env, cwd=work)
    inproc = json.loads(s.stdout)
    rows.append(Row(f"{model_lines}-line modeling file, in-process (lint_source)", inproc["median"], inproc["cpu"],
                    model_lines,
                    note=f"first call {fmt_s(inproc['first'])} s; import {fmt_s(inproc['import'])} s; "
                         f"{inproc['findings']} findings"))
    print(f"  {rows[-1].label:<52} {fmt_s(inproc['median']):>8} s  {rows[-1].note}", flush=True)
    small = trees[SMALL_FILE[0]] / SMALL_FILE[1]
    small_lines = small.read_bytes().count(b"\n")
    pre_commit = timed(f"one {small_lines}-line file, whole process (pre-commit)",
                       [py, "-m", "dtypelint", "check", "--no-cache", "--isolated", "--exit-zero", str(small)],
                       small_lines, max(5, args.repeat), note="default output")
    version = timed("dtypelint --version, whole process", [py, "-m", "dtypelint", "--version"], None,
                    max(5, args.repeat), note="start-up")

    lsp_file = trees[MODEL_2400[0]] / MODEL_2400[1]
    lsp_lines = lsp_file.read_bytes().count(b"\n")
    workspace = work / "workspace"
    shutil.copytree(lsp_file.parent, workspace / lsp_file.parent.name)
    lsp = None
    try:
        lsp = time_editor_session([py, "-m", "dtypelint", "lsp"], workspace,
                                  workspace / lsp_file.parent.name / lsp_file.name, edits=5, env=env)
    except Exception as exc:  # the LSP extra may be missing in the measured checkout
        print(f"  LSP session failed: {type(exc).__name__}: {exc}")
    if lsp:
        edit = statistics.median(lsp["edits"])
        rows.append(Row(f"LSP open -> diagnostics ({lsp_lines} lines)", lsp["open"], None, lsp_lines,
                        note=f"{lsp['diagnostics']} findings"))
        rows.append(Row("LSP edit -> diagnostics (0.3 s debounce)", edit, None, lsp_lines,
                        note="median of " + ", ".join(fmt_s(x) for x in lsp["edits"])))
        for r in rows[-2:]:
            print(f"  {r.label:<52} {fmt_s(r.seconds):>8} s  {r.note}", flush=True)

    whole_rows = {}
    if not args.quick:
        w_files, w_lines = corpus_mod.count(whole)
        print(f"whole corpus ({w_files} files, {w_lines} lines):")
        paths = [str(p) for p in whole]
        whole_rows["floor"] = timed("whole corpus: ast.parse floor, 2 processes", [py, "-c", AST_FLOOR, "2", *paths],
                                    w_lines)
        if peers:
            whole_rows["ruff"] = timed("whole corpus: ruff check", [str(peers / "ruff"), "check", "--no-cache",
                                       "--exit-zero", "--isolated", "--quiet", *paths], w_lines,
                                       note="no dtype analysis")
        whole_rows["cold"] = timed("whole corpus: dtypelint cold, -j 2", [*dtl, "--no-cache", "-j", "2", *paths],
                                   w_lines)
    shutil.rmtree(work, ignore_errors=True)

    # -- ratios and targets ------------------------------------------------------------
    f2 = floor2.seconds
    for r in rows:  # ratios on the same files only (the copies and the whole corpus have their own rows)
        if r.lines == n_lines and r.label.startswith(("dtypelint", "ruff", "ast.parse", "TorchFix", "Fixit")):
            r.ratio = f"{r.seconds / f2:.1f}x floor"
    for r in rows:
        if r.label.startswith(("TorchFix", "Fixit")):
            r.ratio += f"; {r.seconds / cold2.seconds:.0f}x dtypelint -j 2"
    # Each target is judged on wall time (what users wait for) and on CPU time (the work done; on a
    # machine shared with other jobs, wall time is inflated and CPU time much less so).
    targets: list[tuple[str, str, str, bool, bool | None]] = []

    def target(name: str, limit: float, wall: float, cpu: float | None = None, fmt: str = "{:.1f}x") -> None:
        targets.append((name, fmt.format(wall), fmt.format(cpu) if cpu is not None else "",
                        wall <= limit, (cpu <= limit) if cpu is not None else None))

    def cpu_of(s: measure.Sample, jobs: int = 1) -> float:
        return s.cpu / jobs  # CPU seconds per core: what a quiet machine would show as wall time

    target("cold -j 2 <= 5x the ast floor (2 processes)", 5, cold2.seconds / f2, cpu_of(cold2) / cpu_of(floor2))
    if ruff is not None:
        target("cold -j 2 <= 6x ruff", 6, cold2.seconds / ruff.seconds, cpu_of(cold2) / cpu_of(ruff))
    for name, peer in (("TorchFix", torchfix), ("Fixit", fixit)):
        if peer is not None:  # "x faster": compare the inverse with 1/30
            target(f">= 30x faster than {name} (dtypelint / peer <= 1/30)", 1 / 30, cold2.seconds / peer.seconds,
                   cold2.cpu / peer.cpu, fmt="{:.3f}")
    target("warm <= 0.5x the ast floor", 0.5, warm.seconds / f2, warm.cpu / floor2.cpu, fmt="{:.2f}x")
    target("~2,000-line file in-process <= 0.150 s", 0.150, inproc["median"], inproc["cpu"], fmt="{:.3f} s")
    target("one small file, whole process <= 0.2 s", 0.2, pre_commit.seconds, pre_commit.cpu, fmt="{:.2f} s")
    if lsp:
        target("LSP open -> diagnostics <= 0.4 s", 0.4, lsp["open"], None, fmt="{:.2f} s")
        target("LSP edit -> diagnostics <= debounce + 0.25 s", 0.55, statistics.median(lsp["edits"]), None,
               fmt="{:.2f} s")
    runs = [cold1, cold2, *scale.values(), *([whole_rows["cold"]] if "cold" in whole_rows else [])]
    worker_peak = max(max(s.worker_mb, s.main_mb) for s in runs)
    target("peak memory <= 200 MB per process (VmHWM, shared pages included)", 200, worker_peak, None, fmt="{:.0f} MB")
    if len(scale) == 3:
        target("cost linear in lines: (x4 time / 4) / x1 time <= 1.2", 1.2, scale[4].seconds / 4 / scale[1].seconds,
               scale[4].cpu / 4 / scale[1].cpu, fmt="{:.2f}")
    if "cold" in whole_rows:
        target("whole corpus cold -j 2 < 40 s", 40, whole_rows["cold"].seconds, whole_rows["cold"].cpu / 2,
               fmt="{:.1f} s")

    table = render(rows, targets)
    ended_load = load()
    print("\n" + table)
    if not args.no_write:
        header = (f"Measured on {datetime.date.today().isoformat()} — {machine()}; load average {started_load} at the "
                  f"start, {ended_load} at the end (the machine is shared: wall times of a busy run are pessimistic; "
                  f"CPU time is less sensitive).  dtypelint {args.label or commit}.")
        write_doc(args.output, header, table, n_files, n_lines)
        print(f"wrote {args.output}")


def render(rows: list[Row], targets: list[tuple[str, str, str, bool, bool | None]]) -> str:
    out = ["| what | wall s | CPU s | lines/s | peak RSS main / largest worker | ratio | notes |",
           "|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        cpu = fmt_s(r.cpu) if r.cpu is not None else ""
        rate = f"{r.lines / r.seconds:,.0f}" if r.lines and r.seconds else ""
        mem = ""
        if r.main_mb:
            mem = f"{r.main_mb:.0f} MB" + (f" / {r.worker_mb:.0f} MB" if r.worker_mb else "")
        out.append(f"| {r.label} | {fmt_s(r.seconds)} | {cpu} | {rate} | {mem} | {r.ratio} | {r.note} |")
    out += ["", "| target | wall | holds | CPU per core | holds |", "|---|---:|---|---:|---|"]
    yes = {True: "yes", False: "**no**", None: ""}
    out += [f"| {name} | {wall} | {yes[ok]} | {cpu} | {yes[cpu_ok]} |" for name, wall, cpu, ok, cpu_ok in targets]
    return "\n".join(out)


def write_doc(path: Path, header: str, table: str, n_files: int, n_lines: int) -> None:
    text = f"""# Performance

How long dtypelint takes, next to the floor of any Python analyzer (CPython's `ast.parse` of every file) and
the linters users compare it with, on real model code.  Every figure below comes from one run of

```
python benchmarks/bench_check.py
```

on the same files and cores.  The corpus is pinned PyPI wheels: timm 1.0.31 ({n_files} files, {n_lines:,} lines)
for the main rows; the whole corpus adds the `models` trees of transformers 5.23.0 and diffusers 0.42.1.  The
peers (ruff {PEERS[0].split('==')[1]}, TorchFix {PEERS[1].split('==')[1]}, Fixit {PEERS[2].split('==')[1]}) run
from their own virtualenv.  "cold" is `--no-cache`; "warm" is the second run with the cache; the editor rows
time a real LSP client talking to `dtypelint lsp` over stdio.  Wall time is the best of a few runs for the short
commands; CPU time is user + system of the process and its workers.

{header}

{table}

## How dtypelint spends a cold run

`check` reads each file, turns it into code (a notebook's cells become one module), skips files that
cannot hold a hazard (a text prefilter), parses the rest with CPython's `ast`, and hands that tree to both
the project index (phase 1) and the analysis (phase 2) when both run in one process (up to 1 MiB of source:
a tree takes about 40 times its text in memory).  libcst, whose parse costs about ten times CPython's, runs
only on files being fixed.  Cache hits are answered without starting a worker; a run over fewer than
256 KiB of source, or with `-j 1`, runs in one process.  During a run the garbage collector runs less often
and skips the project index (`gc.freeze`): with CPython's defaults, collections scanning the index and the
trees cost about a third of a cold run.
"""
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
