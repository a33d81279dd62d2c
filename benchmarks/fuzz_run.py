"""The long fuzz run: many generated programs through lint and fix, every failure recorded.

Usage:
    python benchmarks/fuzz_run.py [--model 5000] [--grammar 3000] [--mutants 2000] [--projects 500] [--seed 0]
                                  [--notes /work/notes/fuzz-crashes.md]

Four generators (see ``tests/fuzzing.py``): PyTorch-model-shaped programs, hypothesmith's
grammar-generated programs (with a probe function appended), mutations of the real fixtures,
and multi-file packages whose modules import each other (checked through the engine's two phases).  Each valid program must satisfy ``fuzzing.problems_of`` (no exception, no DTL005, fixes
that compile).  Failures are grouped by their signature (kind and the innermost dtypelint frame),
each group's smallest program is reduced statement by statement, and the reproducers (program
text and traceback) are appended to the notes file.  Figures are printed; exit status 1 when
something failed.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fuzzing import (FIXTURES, compiles, model_programs, mutate, problems_of, project_problems,  # noqa: E402
                     projects, reduce, with_probe)
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402


def signature(problem: str) -> str:
    """Kind plus the innermost dtypelint frame (or the message): groups one bug's many programs."""
    kind = problem.split(":", 1)[0]
    frames = re.findall(r'File "[^"]*?(dtypelint/[^"]+)", line (\d+), in (\w+)', problem)
    if frames:
        path, line, fn = frames[-1]
        exc = re.findall(r"^(\w+(?:Error|Exception)\w*):", problem, re.M)
        return f"{kind} {exc[-1] if exc else ''} at {path}:{line} ({fn})"
    first = problem.splitlines()[0]
    return f"{kind} {re.sub(r'[0-9]+', 'N', first)[:160]}"


class Recorder:
    def __init__(self):
        self.programs = Counter()
        self.invalid = Counter()
        self.failures: dict[str, list[tuple[str, str]]] = {}

    def check(self, generator: str, program: str | dict | None) -> None:
        if isinstance(program, dict):  # a multi-file project
            self.programs[generator] += 1
            for problem in project_problems(program):
                text = "\n".join(f"# --- {name}\n{body}" for name, body in program.items())
                self.failures.setdefault(signature(problem), []).append((text, problem))
            return
        if program is None or not compiles(program):
            self.invalid[generator] += 1
            return
        self.programs[generator] += 1
        for problem in problems_of(program):
            self.failures.setdefault(signature(problem), []).append((program, problem))


def run_hypothesis(strategy, n: int, rec: Recorder, name: str, transform=lambda t: t, seed_value: int = 0) -> None:
    @seed(seed_value)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def body(text):
        rec.check(name, transform(text))

    body()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=int, default=5000)
    ap.add_argument("--grammar", type=int, default=3000)
    ap.add_argument("--mutants", type=int, default=2000)
    ap.add_argument("--projects", type=int, default=500, help="multi-file packages (cross-file facts, cycles)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--notes", type=Path, default=None, help="append the reduced reproducers to this file")
    args = ap.parse_args()
    rec = Recorder()
    t0 = time.perf_counter()
    if args.model:
        run_hypothesis(model_programs(), args.model, rec, "model-shaped", seed_value=args.seed)
        print(f"model-shaped: {rec.programs['model-shaped']} programs ({time.perf_counter() - t0:.0f}s)", flush=True)
    if args.grammar:
        import hypothesmith

        run_hypothesis(hypothesmith.from_grammar(), args.grammar, rec, "hypothesmith", with_probe, args.seed)
        print(f"hypothesmith: {rec.programs['hypothesmith']} programs ({time.perf_counter() - t0:.0f}s)", flush=True)
    rnd = random.Random(args.seed)
    texts = [(f, f.read_text(encoding="utf-8")) for f in FIXTURES]
    for i in range(args.mutants):
        _, text = texts[i % len(texts)]
        rec.check("mutants", mutate(text, rnd, n=rnd.randint(1, 4)))
    print(f"mutants: {rec.programs['mutants']} programs ({time.perf_counter() - t0:.0f}s)", flush=True)

    if args.projects:
        run_hypothesis(projects(), args.projects, rec, "projects", seed_value=args.seed)
        print(f"projects: {rec.programs['projects']} packages ({time.perf_counter() - t0:.0f}s)", flush=True)

    total = sum(rec.programs.values())
    print(f"\n{total} valid programs ({dict(rec.programs)}), {sum(rec.invalid.values())} invalid ones skipped "
          f"({dict(rec.invalid)}), {time.perf_counter() - t0:.0f}s")
    print(f"failing programs: {sum(len(v) for v in rec.failures.values())} in {len(rec.failures)} distinct failures")
    entries = []
    for sig, cases in sorted(rec.failures.items()):
        program, problem = min(cases, key=lambda c: len(c[0]))
        if program.startswith("# --- "):  # a project: reported whole
            small, detail = program, problem
        else:
            small = reduce(program, lambda t, s=sig: any(signature(p) == s for p in problems_of(t)))
            detail = next((p for p in problems_of(small) if signature(p) == sig), problem)
        print(f"- {sig}: {len(cases)} programs; reduced to {len(small.splitlines())} lines")
        entries.append(f"### {sig}\n\nFound by `benchmarks/fuzz_run.py` ({len(cases)} generated programs). "
                       f"Reduced reproducer:\n\n```python\n{small.rstrip()}\n```\n\n```\n{detail.rstrip()}\n```\n")
    if args.notes and entries:
        with open(args.notes, "a", encoding="utf-8") as fh:
            fh.write(f"\n## fuzz run {time.strftime('%Y-%m-%d %H:%M')} (seed {args.seed}, {total} programs)\n\n")
            fh.write("\n".join(entries))
        print(f"reproducers appended to {args.notes}")
    return 1 if rec.failures else 0


if __name__ == "__main__":
    sys.exit(main())
