"""Speed and memory of `dtypelint check` on a real corpus, next to the parse floor and peer linters.

Usage:
    python benchmarks/bench_check.py [--corpus DIR] [--peers-venv DIR] [--fetch]

The corpus defaults to ``corpus/timm`` (git-ignored).  ``--fetch`` downloads the
timm wheel from PyPI and unpacks it there.  Peers (ruff, TorchFix, Fixit) are run
from ``--peers-venv`` when given (Fixit pins an older click, so keep them in their
own virtualenv: ``python -m venv /tmp/peers && /tmp/peers/bin/pip install ruff fixit TorchFix``).
Each command runs in a fresh wrapper process that reports wall time and the peak
resident memory of the largest child process.  Figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WRAPPER = (
    "import resource, subprocess, sys, time, json\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
    "dt = time.perf_counter() - t\n"
    "print(json.dumps({'seconds': dt, 'rss_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
    "'rc': p.returncode, 'out': p.stdout.decode(errors='replace')[-200000:]}))\n"
)
PARSE_FLOOR = (
    "import sys, pathlib, libcst\n"
    "for p in pathlib.Path(sys.argv[1]).rglob('*.py'):\n"
    "    try:\n"
    "        libcst.parse_module(p.read_text(encoding='utf-8'))\n"
    "    except Exception:\n"
    "        pass\n"
)
AST_FLOOR = PARSE_FLOOR.replace("libcst.parse_module", "compile").replace(
    "p.read_text(encoding='utf-8'))", "p.read_text(encoding='utf-8'), str(p), 'exec', 1024)").replace(", libcst", "")


def fetch(corpus: Path) -> None:
    wheels = Path(tempfile.mkdtemp())
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "timm==1.0.31", "-d", str(wheels), "-q"], check=True)
    corpus.parent.mkdir(parents=True, exist_ok=True)
    for whl in wheels.glob("*.whl"):
        zipfile.ZipFile(whl).extractall(corpus.parent)
    shutil.rmtree(wheels)


def measure(cmd: list[str], cwd: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], cwd=cwd, capture_output=True, text=True)
    return json.loads(proc.stdout)


def count(corpus: Path) -> tuple[int, int]:
    files = list(corpus.rglob("*.py"))
    lines = sum(len(p.read_bytes().splitlines()) for p in files)
    return len(files), lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=REPO / "corpus" / "timm")
    ap.add_argument("--peers-venv", type=Path)
    ap.add_argument("--fetch", action="store_true")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    corpus = args.corpus.resolve()
    if not corpus.is_dir():
        if not args.fetch:
            sys.exit(f"corpus {corpus} not found; run with --fetch or pass --corpus")
        fetch(corpus)
    n_files, n_lines = count(corpus)
    print(f"corpus: {corpus} — {n_files} files, {n_lines} lines; {os.cpu_count()} cores; Python {sys.version.split()[0]}")
    cache = Path(tempfile.mkdtemp())
    dtl = [sys.executable, "-m", "dtypelint", "check", "--exit-zero", "--output-format", "json"]
    rows: list[tuple[str, list[str]]] = [
        ("libcst parse only (floor, 1 process)", [sys.executable, "-c", PARSE_FLOOR, str(corpus)]),
        ("CPython compile() to AST (1 process)", [sys.executable, "-c", AST_FLOOR, str(corpus)]),
        ("dtypelint check -j 1, cold cache", [*dtl, "--no-cache", "-j", "1", str(corpus)]),
        ("dtypelint check -j 2, cold cache", [*dtl, "--cache-dir", str(cache), "-j", "2", str(corpus)]),
        ("dtypelint check -j 2, warm cache", [*dtl, "--cache-dir", str(cache), "-j", "2", str(corpus)]),
    ]
    if args.peers_venv:
        bin_ = args.peers_venv / "bin"
        rows += [
            ("ruff check (Rust; default rules, no cache)", [str(bin_ / "ruff"), "check", "--no-cache", "--exit-zero", "--isolated", str(corpus)]),
            ("TorchFix (libcst + qualified names, all rules)", [str(bin_ / "torchfix"), "--select", "ALL", str(corpus)]),
            ("Fixit lint (libcst, builtin rules)", [str(bin_ / "fixit"), "lint", str(corpus)]),
        ]
    env_note = "PYTHONPATH=" + str(REPO)
    os.environ["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    print(f"({env_note})\n")
    print(f"{'command':<48} {'seconds':>8} {'lines/s':>9} {'peak RSS':>9}  findings")
    for label, cmd in rows:
        best = None
        for _ in range(args.repeat):
            r = measure(cmd, cwd=REPO)
            if best is None or r["seconds"] < best["seconds"]:
                best = r
        findings = ""
        if "dtypelint" in label:
            try:
                diags = json.loads(best["out"])
                findings = f"{len(diags)} ({sum(1 for d in diags if d['code'].startswith('DTL0'))} could-not-analyse)"
            except ValueError:
                findings = f"rc={best['rc']}"
        print(f"{label:<48} {best['seconds']:>8.2f} {n_lines / best['seconds']:>9.0f} {best['rss_kb'] / 1024:>7.0f}MB  {findings}")
    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
