"""Soak: dtypelint over the whole transformers, timm and diffusers packages, several ways.

Usage:
    python benchmarks/soak.py [--packages transformers timm diffusers] [--sample 40] [--no-fetch]

For each package (an unpacked PyPI wheel, see ``benchmarks/corpus.py``), from the folder holding it:

- run A: ``-j 2``, cold cache;  run B: ``-j 2``, the cache A wrote (warm);  run C: ``-j 1``, no cache;
- every ``.py`` file must be accounted for: checked (the run's "files checked" equals the files
  discovery finds, which equals the ``.py`` files on disk minus excluded folders), and a file that
  could not be analysed carries a DTL0xx diagnostic;
- zero DTL005 (internal error);
- A, B and C identical (the JSON report, byte for byte after parsing), so results do not depend on
  the cache or on the number of workers;
- a sample of files linted alone versus in the folder run: differences are listed, and split into
  those explained by cross-file facts (the finding's dataflow path names another file, or linting the
  file together with the project files it imports gives the folder run's result) and unexplained ones.

Figures are printed; the exit status is 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import DEFAULT_PACKAGES, frozen_source, package_root, python_files  # noqa: E402

SOURCE = frozen_source()


def dtypelint(args: list[str], cwd: Path, cache: Path | None) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(os.environ, PYTHONPATH=str(SOURCE), NO_COLOR="1")
    if cache is not None:
        env["DTYPELINT_CACHE_DIR"] = str(cache)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "dtypelint", *args], cwd=cwd, env=env, capture_output=True)
    return proc, time.perf_counter() - t0


def json_run_many(targets: list[str], cwd: Path, out: Path) -> tuple[list[dict], float, int]:
    proc, seconds = dtypelint(["check", "--no-cache", "--exit-zero", "-j", "2", "--output-format", "json", "-o",
                               str(out), *targets], cwd, None)
    if proc.returncode != 0:
        raise SystemExit(f"dtypelint exited {proc.returncode}:\n{proc.stderr.decode()[-3000:]}")
    return json.loads(out.read_text()), seconds, proc.returncode


def json_run(target: str, cwd: Path, cache: Path | None, jobs: str, out: Path) -> tuple[list[dict], float, int]:
    args = ["check", "--exit-zero", "-j", jobs, "--output-format", "json", "-o", str(out), target]
    if cache is None:
        args.insert(1, "--no-cache")
    proc, seconds = dtypelint(args, cwd, cache)
    if proc.returncode != 0:
        raise SystemExit(f"dtypelint exited {proc.returncode} on {target}:\n{proc.stderr.decode()[-3000:]}")
    return json.loads(out.read_text()), seconds, proc.returncode


ACCOUNT = """
import json, sys
from pathlib import Path
from dtypelint.cache import Cache
from dtypelint.config import ConfigResolver
from dtypelint.discovery import discover
from dtypelint.engine import RunOptions, build_tasks, known_codes, run
found = discover([Path(sys.argv[1])], ConfigResolver(known_codes=known_codes()))
result = run(build_tasks(found.files), RunOptions(jobs=2, cache=Cache(Path(sys.argv[2]))))
outcomes = result.outcomes
print(json.dumps({"discovered": len(found.files), "unreadable": len(found.problems), "outcomes": len(outcomes),
                  "analysed": sum(o.parsed for o in outcomes), "failed": sum(o.failed for o in outcomes),
                  "failed without a DTL0xx": sum(o.failed and not any(d.code.startswith("DTL0") for d in o.diagnostics)
                                                 for o in outcomes),
                  "skipped (no hazard possible)": sum(not o.parsed and not o.failed for o in outcomes)}))
"""


def account(target: str, cwd: Path, cache: Path) -> dict:
    """What happened to every file (through the engine's API, on the warm cache: cheap)."""
    env = dict(os.environ, PYTHONPATH=str(SOURCE))
    proc = subprocess.run([sys.executable, "-c", ACCOUNT, target, str(cache)], cwd=cwd, env=env, capture_output=True,
                          text=True)
    try:
        return json.loads(proc.stdout)
    except ValueError:  # the engine's API changed: say so rather than guess
        print(f"  (per-file accounting unavailable: {proc.stderr.strip()[-300:]})")
        return {}


def key(d: dict) -> tuple:
    return (d["filename"], d["location"]["row"], d["location"]["column"], d["code"], d["message"])


def cross_file(d: dict) -> bool:
    steps = d.get("path") or []
    return any(s.get("filename") not in (None, d["filename"]) for s in steps) or "(" in d["message"] and ".py)" in d["message"]


def project_imports(filename: str, root: Path, package: str, depth: int = 2, limit: int = 300) -> list[str]:
    """The project files ``filename`` imports, ``depth`` levels deep (relative and ``package.``-absolute imports)."""
    seen: dict[str, None] = {}
    level = [filename]
    for _ in range(depth):
        todo, level = level, []
        for current in todo:
            if len(seen) >= limit:
                break
            level += _imports_of(current, root, package, seen, filename)
    return list(seen)[:limit]


def _imports_of(current: str, root: Path, package: str, seen: dict, origin: str) -> list[str]:
    import ast

    try:
        tree = ast.parse((root / current).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return []
    found = []
    folder = (root / current).parent
    for node in ast.walk(tree):
        bases: list[Path] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = folder
                for _ in range(node.level - 1):
                    base = base.parent
            elif node.module and node.module.split(".")[0] == package:
                base = root
            else:
                continue
            mod = base.joinpath(*node.module.split(".")) if node.module else base
            bases = [mod] + [mod / a.name for a in node.names]
        elif isinstance(node, ast.Import):
            bases = [root.joinpath(*a.name.split(".")) for a in node.names if a.name.split(".")[0] == package]
        for b in bases:
            for cand in (b.with_suffix(".py"), b / "__init__.py"):
                if cand.is_file():
                    rel = cand.relative_to(root).as_posix()
                    if rel not in seen and rel != origin:
                        seen[rel] = None
                        found.append(rel)
    return found


def soak_package(name: str, version: str, sample: int, fetch: bool, failures: list[str]) -> dict:
    root = package_root(name, version, fetch)
    if root is None:
        print(f"{name}: not available, skipped")
        return {}
    scratch = Path(tempfile.mkdtemp(prefix=f"dtypelint-soak-{name}-"))
    cache = scratch / "cache"
    on_disk = len(python_files(root / name))
    a, ta, _ = json_run(name, root, cache, "2", scratch / "a.json")
    b, tb, _ = json_run(name, root, cache, "2", scratch / "b.json")
    c, tc, _ = json_run(name, root, None, "1", scratch / "c.json")
    accounted = account(name, root, cache)
    codes = Counter(d["code"] for d in a)
    problems = Counter(d["code"] for d in a if d["code"].startswith("DTL0"))
    row = {"package": f"{name}-{version}", "files on disk": on_disk, **accounted,
           "findings": sum(v for k, v in codes.items() if not k.startswith("DTL0")), "by code": dict(codes),
           "DTL0xx": dict(problems), "cold -j2 s": round(ta, 1), "warm -j2 s": round(tb, 1), "cold -j1 s": round(tc, 1),
           "A==B (cold==warm)": a == b, "A==C (-j2==-j1)": a == c}
    print(json.dumps(row))
    if problems.get("DTL005"):
        failures += [f"{name}: DTL005 {d['filename']}: {d['message']}" for d in a if d["code"] == "DTL005"]
    if accounted and accounted["outcomes"] != accounted["discovered"]:
        failures.append(f"{name}: {accounted['discovered']} files discovered but {accounted['outcomes']} checked")
    if accounted.get("failed without a DTL0xx"):
        failures.append(f"{name}: {accounted['failed without a DTL0xx']} files failed without a DTL0xx diagnostic")
    if a != b:
        failures.append(f"{name}: warm run differs from cold: {sorted(set(map(key, a)) ^ set(map(key, b)))[:5]}")
    if a != c:
        failures.append(f"{name}: -j1 differs from -j2: {sorted(set(map(key, a)) ^ set(map(key, c)))[:5]}")

    # a sample of files linted alone: files with findings first, then random others
    by_file: dict[str, list[dict]] = {}
    for d in a:
        by_file.setdefault(d["filename"], []).append(d)
    rng = random.Random(14)
    with_findings = sorted(by_file)
    others = [p.relative_to(root).as_posix() for p in python_files(root / name)]
    picked = (rng.sample(with_findings, min(len(with_findings), sample // 2))
              + rng.sample(others, min(len(others), sample - min(len(with_findings), sample // 2))))
    explained, unexplained = 0, []
    for filename in dict.fromkeys(picked):
        alone, _, _ = json_run(filename, root, None, "1", scratch / "alone.json")
        folder = sorted(by_file.get(filename, []), key=key)
        alone = sorted(alone, key=key)
        if alone == folder:
            continue
        only_folder = [d for d in folder if d not in alone]
        only_alone = [d for d in alone if d not in folder]
        if all(cross_file(d) for d in only_folder) and not only_alone:
            explained += 1
            continue
        deps = project_imports(filename, root, name)  # alone with the project files it imports
        with_deps, _, _ = json_run_many([filename, *deps], root, scratch / "deps.json")
        if sorted((d for d in with_deps if d["filename"] == filename), key=key) == folder:
            explained += 1
        else:
            unexplained.append((filename, [key(d) for d in only_folder][:3], [key(d) for d in only_alone][:3]))
    print(json.dumps({"package": name, "sampled alone": len(dict.fromkeys(picked)),
                      "same as in the folder": len(dict.fromkeys(picked)) - explained - len(unexplained),
                      "differ by cross-file facts only (same with the files it imports)": explained, "differ otherwise": len(unexplained)}))
    for u in unexplained:
        print(f"  alone != folder: {u[0]}\n    only in the folder run: {u[1]}\n    only alone: {u[2]}")
        failures.append(f"{name}: {u[0]} linted alone differs from the folder run (not explained by cross-file facts)")
    shutil.rmtree(scratch, ignore_errors=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packages", nargs="*", default=list(DEFAULT_PACKAGES))
    ap.add_argument("--sample", type=int, default=40, help="files linted alone, per package")
    ap.add_argument("--no-fetch", action="store_true")
    args = ap.parse_args()
    failures: list[str] = []
    t0 = time.perf_counter()
    for name in args.packages:
        soak_package(name, DEFAULT_PACKAGES[name], args.sample, not args.no_fetch, failures)
    print(f"soak finished in {time.perf_counter() - t0:.0f}s")
    print("FAILURES:\n  " + "\n  ".join(failures[:100]) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
