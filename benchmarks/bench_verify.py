"""Wall time of `dtypelint verify` on one model file at a time, and on the whole fixtures folder.

Usage:
    python benchmarks/bench_verify.py [FILE ...] [--jobs N] [--transformers]

Without FILEs it times each flagged fixture alone (the target: under 30 s per model file on CPU)
and then `fixtures/` with `-j N`.  `--transformers` adds the T5 and MT5 model files of the installed
`transformers` (skipped when it is not installed; site-packages is excluded by default, so a
temporary configuration lifts the excludes).  Each command runs as a fresh process: the time
includes starting Python, importing torch, `check` and the verification.  Figures are printed,
not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(args: list[str], cwd: Path) -> tuple[float, list]:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
    started = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "dtypelint", "verify", "--no-cache", "-q", "--output-format", "json",
                        *args], cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    try:
        return seconds, json.loads(p.stdout)
    except json.JSONDecodeError:
        print(p.stderr, file=sys.stderr)
        return seconds, []


def line(label: str, seconds: float, results: list) -> str:
    repro = sum(r["status"] == "reproduced" for r in results)
    fixed = sum(r["fixed"] is True for r in results)
    inner = sum(r.get("seconds", 0.0) for r in results)
    return f"{label:60s} {seconds:7.1f} s  ({len(results)} results, {repro} reproduced, {fixed} fixed; " \
           f"{inner:.1f} s inside the children)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--transformers", action="store_true")
    args = parser.parse_args()
    files = args.files or sorted({p for p in (REPO / "fixtures").rglob("*.py")
                                  if "# expect:" in p.read_text(encoding="utf-8")})
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for f in files:
        seconds, results = run([str(f)], REPO)
        print(line(str(f.relative_to(REPO) if f.is_relative_to(REPO) else f), seconds, results))
    if not args.files:
        seconds, results = run(["-j", str(args.jobs), "fixtures"], REPO)
        print(line(f"fixtures/ (-j {args.jobs})", seconds, results))
    if args.transformers:
        try:
            import transformers
        except ImportError:
            print("transformers is not installed: skipped")
            return
        models = Path(transformers.__file__).parent / "models"
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "dtypelint.toml"
            config.write_text('exclude = ["__pycache__"]\nrespect-gitignore = false\n')
            for rel in ("t5/modeling_t5.py", "mt5/modeling_mt5.py"):
                seconds, results = run(["--config", str(config), str(models / rel)], Path(tmp))
                print(line(f"transformers {rel}", seconds, results))


if __name__ == "__main__":
    main()
