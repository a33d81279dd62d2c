"""Fix safety on real code: ``--fix --unsafe-fixes`` over copies of timm and the transformers models.

Usage:
    python benchmarks/fix_roundtrip.py [--jobs 2] [--limit N] [--kills 4] [--workdir DIR] [--no-fetch]

Steps (figures are printed, nothing is asserted; the exit status is 1 when a check failed):

1. Copy ``timm/`` and ``transformers/models/`` (with the package ``__init__.py`` files, so
   module names resolve) into a scratch folder (see ``benchmarks/corpus.py`` for where the
   wheels come from).
2. Give some of the files that have a fixable finding another on-disk format: CRLF line
   endings, a UTF-8 BOM, a latin-1 coding cookie, mode 0755, no final newline.
3. ``dtypelint check --fix --unsafe-fixes``: every changed file must still compile, and keep
   its BOM, line endings, encoding, final newline and mode; no DTL005 anywhere.
4. A second identical run must change nothing.
5. From the unfixed copy again, the same run is killed with SIGKILL once a quarter, half... of
   the files it changes have been written:
   every file must be complete (the original, the final fixed file, or an intermediate
   round that compiles); none may be truncated.
"""

from __future__ import annotations

import argparse
import codecs
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import tokenize
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import frozen_source, package_root, python_files  # noqa: E402

SOURCE = frozen_source()

VARIANTS = ("crlf", "bom", "latin1", "mode755", "no-final-newline")


def dtypelint(args: list[str], cwd: Path, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SOURCE), NO_COLOR="1")
    if cache is not None:
        env["DTYPELINT_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "dtypelint", *args], cwd=cwd, env=env, capture_output=True)


def copy_corpus(work: Path, limit: int | None, fetch: bool) -> list[str]:
    """Copy the packages into ``work``; returns the folders to lint (relative to ``work``)."""
    targets = []
    timm = package_root("timm", "1.0.31", fetch)
    if timm is not None:
        shutil.copytree(timm / "timm", work / "timm", ignore=shutil.ignore_patterns("__pycache__"))
        targets.append("timm")
    tf = package_root("transformers", "5.23.0", fetch)
    if tf is not None:
        (work / "transformers").mkdir()
        shutil.copy2(tf / "transformers" / "__init__.py", work / "transformers" / "__init__.py")
        shutil.copytree(tf / "transformers" / "models", work / "transformers" / "models",
                        ignore=shutil.ignore_patterns("__pycache__"))
        targets.append("transformers")
    for p in python_files(work):  # the copies must be writable (the corpus may be read-only)
        os.chmod(p, 0o644)
    if limit:
        keep = set(python_files(work)[:limit])
        for p in python_files(work):
            if p not in keep and p.name != "__init__.py":
                p.unlink()
    return targets


def compiles(data: bytes, name: str) -> bool:
    try:
        compile(data, name, "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def fmt_of(data: bytes, mode: int) -> dict:
    """The on-disk facts --fix must keep."""
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        encoding = "?"
    crlf = data.count(b"\r\n")
    return {"bom": data.startswith(codecs.BOM_UTF8), "encoding": encoding,
            "newline": "crlf" if crlf and crlf == data.count(b"\n") else ("lf" if b"\r" not in data else "mixed"),
            "final_newline": data.endswith(b"\n"), "mode": mode}


def apply_variant(path: Path, variant: str) -> bool:
    data = path.read_bytes()
    if variant == "crlf":
        if b"\r" in data:
            return False
        path.write_bytes(data.replace(b"\n", b"\r\n"))
    elif variant == "bom":
        path.write_bytes(codecs.BOM_UTF8 + data)
    elif variant == "latin1":
        try:
            text = data.decode("utf-8").encode("latin-1")
        except (UnicodeDecodeError, UnicodeEncodeError):
            return False
        if text.startswith(b"#!"):
            return False
        path.write_bytes(b"# -*- coding: latin-1 -*-\n" + text)
    elif variant == "mode755":
        os.chmod(path, 0o755)
    elif variant == "no-final-newline":
        path.write_bytes(data.rstrip(b"\n"))
    return True


def snapshot(work: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(work).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in python_files(work)}


def report_codes(path: Path) -> Counter:
    try:
        return Counter(d["code"] for d in json.loads(path.read_text()))
    except (OSError, ValueError):
        return Counter()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--limit", type=int, default=None, help="keep only the first N files (a quick run)")
    ap.add_argument("--kills", type=int, default=4, help="SIGKILL trials")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--no-fetch", action="store_true", help="do not download missing wheels")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="dtypelint-fix-roundtrip-"))
    if work.exists() and any(work.iterdir()):
        sys.exit(f"{work} is not empty")
    work.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="dtypelint-fix-scratch-"))
    cache = scratch / "cache"
    failures: list[str] = []

    targets = copy_corpus(work, args.limit, fetch=not args.no_fetch)
    if not targets:
        print("no corpus available (offline and nothing unpacked): skipped")
        return 0
    files = python_files(work)
    print(f"corpus: {', '.join(targets)} -- {len(files)} files in {work}")

    # 1. which files have a fixable finding; give some of them another on-disk format
    t0 = time.perf_counter()
    first = dtypelint(["check", "--unsafe-fixes", "-j", args.jobs, "--output-format", "json",
                       "-o", str(scratch / "before.json"), *targets], work, cache)
    print(f"check: rc={first.returncode} in {time.perf_counter() - t0:.0f}s; findings {dict(report_codes(scratch / 'before.json'))}")
    fixable = sorted({d["filename"] for d in json.loads((scratch / "before.json").read_text()) if d.get("fix")})
    variants: dict[str, str] = {}
    for i, name in enumerate(fixable):
        variant = VARIANTS[i % len(VARIANTS)]
        if i % (len(VARIANTS) + 1) != len(VARIANTS) and apply_variant(work / name, variant):  # some stay as they are
            variants[name] = variant
    print(f"files with a fixable finding: {len(fixable)}; given another format: {dict(Counter(variants.values()))}")
    pristine = scratch / "pristine"
    shutil.copytree(work, pristine, symlinks=True)
    before = snapshot(work)

    # 2. fix
    t0 = time.perf_counter()
    fix1 = dtypelint(["check", "--fix", "--unsafe-fixes", "-j", args.jobs, "--output-format", "json",
                      "-o", str(scratch / "fix1.json"), *targets], work, cache)
    seconds = time.perf_counter() - t0
    after = snapshot(work)
    changed = [n for n in after if after[n][0] != before[n][0]]
    codes = report_codes(scratch / "fix1.json")
    print(f"fix: rc={fix1.returncode} in {seconds:.0f}s; {len(changed)} files changed; remaining {dict(codes)}")
    if fix1.returncode not in (0, 1):
        failures.append(f"fix run exited {fix1.returncode}: {fix1.stderr.decode()[-2000:]}")
    if codes.get("DTL005"):
        failures.append(f"{codes['DTL005']} DTL005 (internal error) in the fix run")
    kept = Counter()
    for name in changed:
        data, mode = after[name]
        if not compiles(data, name):
            failures.append(f"{name}: does not compile after --fix")
        old, new = fmt_of(*before[name]), fmt_of(data, mode)
        for key in old:
            if old[key] != new[key]:
                failures.append(f"{name}: {key} changed from {old[key]!r} to {new[key]!r}")
            elif name in variants:
                kept[key] += 1
    changed_variants = Counter(variants[n] for n in changed if n in variants)
    print(f"changed files that had another format: {dict(changed_variants)}; compile failures: "
          f"{sum('does not compile' in f for f in failures)}; format changes: {sum(' changed from ' in f for f in failures)}")

    # 3. a second pass changes nothing
    fix2 = dtypelint(["check", "--fix", "--unsafe-fixes", "-j", args.jobs, "--output-format", "json",
                      "-o", str(scratch / "fix2.json"), *targets], work, cache)
    again = snapshot(work)
    moved = [n for n in again if again[n] != after[n]]
    print(f"second pass: rc={fix2.returncode}; {len(moved)} files changed{': ' + ', '.join(moved[:10]) if moved else ''}")
    failures += [f"{n}: changed again by a second --fix" for n in moved]

    # 4. killed mid-run: every file complete
    final = after
    truncated, intermediate, landed = 0, 0, 0
    for k in range(args.kills):
        shutil.rmtree(work)
        shutil.copytree(pristine, work, symlinks=True)
        env = dict(os.environ, PYTHONPATH=str(SOURCE), NO_COLOR="1", DTYPELINT_CACHE_DIR=str(cache))
        proc = subprocess.Popen([sys.executable, "-m", "dtypelint", "check", "--fix", "--unsafe-fixes", "-j", args.jobs,
                                 "-q", *targets], cwd=work, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        # kill as soon as some of the files the fix changes have been written (so it lands mid-run)
        want = max(1, round(len(changed) * (k + 0.5) / max(1, args.kills)))
        watched = {n: (work / n).stat().st_mtime_ns for n in changed}
        deadline = time.monotonic() + seconds * 3 + 60
        while proc.poll() is None and time.monotonic() < deadline:
            written = sum((work / n).stat().st_mtime_ns != m for n, m in watched.items())
            if written >= want:
                break
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        now = snapshot(work)
        fixed_now = 0
        for name, (data, _) in now.items():
            if data == before[name][0]:
                continue
            fixed_now += 1
            if data != final[name][0]:
                if compiles(data, name):
                    intermediate += 1
                else:
                    truncated += 1
                    failures.append(f"kill {k}: {name} is neither the original nor a complete fix")
        landed += 0 < fixed_now < len(changed)
        leftovers = [p for p in work.rglob("*.dtypelint.tmp")]
        print(f"kill {k + 1}: {fixed_now} of {len(changed)} files fixed when killed; "
              f"{len(leftovers)} temporary files left (the next run removes them)")
    if args.kills:
        print(f"kills: {landed} of {args.kills} landed mid-run; truncated files: {truncated}; "
              f"complete intermediate rounds: {intermediate}")

    shutil.rmtree(scratch, ignore_errors=True)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    print("FAILURES:\n  " + "\n  ".join(failures[:50]) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
