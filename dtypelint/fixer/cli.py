"""The end of ``dtypelint check`` in fix mode (``--fix``, ``--fix-only``, ``--diff``).

Kept out of ``dtypelint/cli.py`` so the command itself only declares the options.

Behaviour (modelled on ruff):

- ``--fix``: apply safe fixes (``--unsafe-fixes``: also unsafe ones) and write the
  files; report the findings that remain; the summary says how many were fixed.
  Exit 1 when findings remain (or, with ``--exit-non-zero-on-fix``, when anything
  was fixed), else 0.
- ``--fix-only``: like ``--fix`` but do not report the remaining findings (problems
  that kept a file from being checked or fixed, DTL0xx, are still reported); exit 0
  unless ``--exit-non-zero-on-fix`` and something was fixed, or a DTL0xx problem.
- ``--diff``: write nothing; print a unified diff of what ``--fix`` would change;
  exit 1 when something would change (or a DTL0xx problem occurred), else 0.
- ``-`` (standard input): the fixed source goes to standard output (unchanged if
  nothing applies), every message to standard error.
- ``--show-fixes``: list the fixes applied (or, with ``--diff``, that would be).

When a written file's contribution to the project index changed (a helper's return
dtype, a base class: facts other files depend on), the project is checked and fixed again (at most ``PROJECT_ROUNDS``
rounds; with the cache only what changed is re-analysed, with ``--no-cache`` everything
is) so every file sees the new facts, and the findings reported at the end describe the
files as they are now on disk.  Otherwise one round is enough.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable, TextIO

from dtypelint.diagnostics import Diagnostic
from dtypelint.fixer.loop import FixOptions
from dtypelint.fixer.output import fixes_listing, unified_diff
from dtypelint.fixer.run import FileFixer
from dtypelint.fixer.write import clean_stale_temporaries

PROJECT_ROUNDS = 3

EXIT_CLEAN, EXIT_FINDINGS = 0, 1


def _is_problem(d: Diagnostic) -> bool:
    return d.code.startswith("DTL0")


def changed_facts(task, report) -> set[str]:
    """Short names of the project-index entries a fix changed (what other files may depend on)."""
    from dtypelint import analysis

    if task is None:
        return {"*"}
    try:
        before = analysis.summarize(report.original, task.module_name, task.filename) or {}
        after = analysis.summarize(report.text, task.module_name, task.filename) or {}
    except Exception:
        return {"*"}
    keys = {k for k in set(before) | set(after) if repr(before.get(k)) != repr(after.get(k))}
    return {k.rsplit(".", 1)[-1] for k in keys}


def write_roots(paths: list[Path]) -> list[str]:
    """The folders fixes may be written into: each named folder, and the folder of each named file.

    Symlinks are resolved here (a named link to a folder is followed, the user chose it); a
    file reached through a link that leads outside all of them is not written.
    """
    out = []
    for p in paths:
        folder = p if p.is_dir() else Path(os.path.dirname(os.path.abspath(p)))
        out.append(os.path.realpath(folder))
    return out


def run_fix_mode(*, tasks, options, run: Callable, problems: list[Diagnostic], stdin_task,
                 unsafe: bool, diff: bool, fix_only: bool, show_fixes: bool, exit_non_zero_on_fix: bool,
                 exit_zero: bool, quiet: bool, emit: Callable, make_report: Callable,
                 keep: Callable[[list[Diagnostic]], list[Diagnostic]] | None = None,
                 roots: list[Path] | None = None) -> int:
    """Run the fix loop over ``tasks`` and print what the options ask; returns the exit code.

    ``run(tasks, options)`` is the engine's run (with progress); ``emit(report, stream)``
    prints a report with the chosen reporter; ``make_report(diagnostics, fixed)`` builds one;
    ``keep`` filters the findings that remain after fixing (``--baseline``);
    ``roots``: the paths named on the command line, the only places fixes are written to.
    """
    stdin_mode = stdin_task is not None
    fix_options = FixOptions(unsafe=unsafe, write=not diff and not stdin_mode,
                             write_roots=tuple(write_roots(roots)) if roots else ())
    tasks = [replace(t, fix=FileFixer(fix_options)) for t in tasks]
    if fix_options.write:  # temporary files of a killed earlier run (SIGKILL cannot clean up)
        for folder in {t.path.resolve().parent for t in tasks if t.path is not None}:
            clean_stale_temporaries(folder)
    fixed: dict[str, list[Diagnostic]] = {}
    changed: dict[str, tuple[str, str]] = {}  # filename -> (original, new) for --diff
    by_name = {t.filename: t for t in tasks}
    latest: dict[str, object] = {}
    round_tasks = tasks
    rounds = 1 if (diff or stdin_mode) else PROJECT_ROUNDS
    for _ in range(rounds):
        result = run(round_tasks, options)
        facts: set[str] = set()
        for o in result.outcomes:
            latest[o.filename] = o
            report = o.fix
            if report is None:
                continue
            fixed.setdefault(o.filename, []).extend(report.fixed)
            if report.changed:
                first = changed.get(o.filename, (report.original, report.text))[0]
                changed[o.filename] = (first, report.text)
            if report.written:
                facts |= changed_facts(by_name.get(o.filename), report)
        if not facts:  # no cross-file fact changed: the other files' results stand
            break
        # Check (and fix) the project again so every file sees the new facts.  The whole run: a
        # subset would build an incomplete project index.  With the cache (the default) the files
        # whose content and dependencies did not change are not analysed again.
        round_tasks = tasks
    outcomes = [latest[t.filename] for t in tasks if t.filename in latest]

    remaining = sorted([d for o in outcomes for d in o.diagnostics] + list(problems), key=Diagnostic.sort_key)
    if keep is not None:
        remaining = keep(remaining)
    n_fixed = sum(len(v) for v in fixed.values())
    errors = [d for d in remaining if _is_problem(d)]
    # Where messages go: stdout carries the code (stdin) or the diff.
    msg_stream: TextIO = sys.stderr if (stdin_mode or diff) else sys.stdout

    if stdin_mode:
        o = outcomes[0] if outcomes else None
        data = stdin_task.data or b""
        if o is not None and o.fix is not None and o.fix.changed and o.fix.error is None and o.fix.data is not None:
            data = o.fix.data
        if diff:
            if o is not None and o.fix is not None and o.fix.changed:
                sys.stdout.write(unified_diff(o.fix.original, o.fix.text, o.filename))
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()

    if diff and not stdin_mode:
        for filename in sorted(changed):
            original, new = changed[filename]
            sys.stdout.write(unified_diff(original, new, filename))
        sys.stdout.flush()

    if diff or fix_only:
        if errors:
            emit(make_report(errors, 0), sys.stderr)
        if not quiet:
            verb = "Would fix" if diff else "Fixed"
            if n_fixed:
                n_files = len([f for f in fixed if fixed[f]])
                msg = f"{verb} {n_fixed} {'finding' if n_fixed == 1 else 'findings'}"
                msg += f" in {n_files} {'file' if n_files == 1 else 'files'}."
            else:
                msg = "No findings would be fixed." if diff else "No findings fixed."
            hidden = sum(1 for d in remaining if d.fix and d.fix.applicability == "unsafe") if not unsafe else 0
            if hidden:
                msg += f" {hidden} hidden {'fix' if hidden == 1 else 'fixes'} can be enabled with the `--unsafe-fixes` option."
            print(msg, file=sys.stderr if (diff or stdin_mode) else sys.stdout)
    else:
        stdin_text = None
        if stdin_mode and outcomes and outcomes[0].fix is not None:
            stdin_text = outcomes[0].fix.text  # the findings' positions refer to the fixed source
        emit(make_report(remaining, n_fixed, stdin_text), msg_stream)

    if show_fixes:
        msg_stream.write(fixes_listing(fixed.items(), would=diff))
        msg_stream.flush()

    if exit_zero:
        return EXIT_CLEAN
    if diff:
        return EXIT_FINDINGS if (changed or errors) else EXIT_CLEAN
    if exit_non_zero_on_fix and n_fixed:
        return EXIT_FINDINGS
    if fix_only:
        return EXIT_FINDINGS if errors else EXIT_CLEAN
    return EXIT_FINDINGS if remaining else EXIT_CLEAN
