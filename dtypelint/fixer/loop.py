"""The per-file fix loop: apply fixes, check the result parses, re-analyse, repeat.

Pass ``n`` takes the diagnostics of the current text, keeps the fixes the user
allowed (safe, plus unsafe with ``--unsafe-fixes``), applies every group of
edits that does not overlap an earlier one (``apply_edit_groups``: a fix's edits
go in together or not at all), and checks that the new text parses with libcst
and compiles with CPython.  The new text is analysed again, because a fix can
resolve or reveal other findings and because a fix skipped for overlapping is
proposed again at its new position.  The loop ends when no applicable fix is
left or a pass changes nothing; after ``max_passes`` passes it gives up.

Whenever something goes wrong (the fixed text does not parse or compile, a fix
refers to a name or ``self`` attribute that does not exist (:mod:`dtypelint.fixer.guards`),
the analysis fails on it, the loop does not converge, the result cannot be encoded)
the whole file is left untouched and one DTL006 diagnostic says why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

from dtypelint.diagnostics import Diagnostic, Edit, Fix, Position
from dtypelint.edits import apply_edit_groups
from dtypelint.fixer.guards import introduced_name_problems
from dtypelint.source import SourceFile

MAX_PASSES = 10


@dataclass(frozen=True)
class FixOptions:
    """What ``--fix`` / ``--unsafe-fixes`` / ``--diff`` asked for (travels to the workers)."""

    unsafe: bool = False  # also apply fixes whose applicability is "unsafe"
    write: bool = True  # write changed files back (False: --diff, stdin)
    max_passes: int = MAX_PASSES
    # folders a fix may write into (symlinks resolved); empty: the folder each file is named in
    write_roots: tuple[str, ...] = ()


@dataclass
class FixReport:
    """The result of fixing one file (attached to the engine's ``FileOutcome.fix``)."""

    original: str  # the decoded text before fixing
    text: str  # the decoded text after fixing (== original when nothing changed or on error)
    fixed: list[Diagnostic] = field(default_factory=list)  # findings whose fix was applied
    error: str | None = None  # why the file was left untouched (also reported as DTL006)
    passes: int = 0
    written: bool = False  # the file on disk was replaced
    data: bytes | None = None  # encoded new content (stdin: what goes to stdout)

    @property
    def changed(self) -> bool:
        return self.text != self.original


def applicable(diags: list[Diagnostic], unsafe: bool) -> list[Diagnostic]:
    """Diagnostics whose fix may be applied now, in file order."""
    return [d for d in diags if d.fix is not None and d.fix.edits
            and (d.fix.applicability == "safe" or (unsafe and d.fix.applicability == "unsafe"))]


def normalize_newlines(content: str, newline: str) -> str:
    """Write an edit's line breaks in the file's own style (rules produce ``\\n``)."""
    if newline == "\n" or ("\n" not in content and "\r" not in content):
        return content
    return content.replace("\r\n", "\n").replace("\r", "\n").replace("\n", newline)


def _groups(diags: list[Diagnostic], newline: str) -> list[tuple[Edit, ...]]:
    return [tuple(Edit(normalize_newlines(e.content, newline), e.start, e.end) for e in d.fix.edits)
            for d in diags]


def syntax_problem(text: str, filename: str) -> str | None:
    """Why ``text`` is not valid Python (libcst or CPython rejects it), or None."""
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        first = str(exc.message).splitlines()[0] if str(exc.message) else "syntax error"
        return f"libcst cannot parse it: {first[:120]} (line {exc.raw_line})"
    except (RecursionError, MemoryError) as exc:
        return f"libcst cannot parse it: {type(exc).__name__}"
    try:
        compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _culprits(source: SourceFile, chosen: list[Diagnostic], applied: list[int], filename: str) -> list[Diagnostic]:
    """The fixes that break the parse on their own (to name them in the DTL006 message)."""
    out = []
    for i in applied:
        d = chosen[i]
        text, ok = apply_edit_groups(source, _groups([d], source.newline))
        if ok and syntax_problem(text, filename):
            out.append(d)
    return out


def _describe(d: Diagnostic) -> str:
    return f"{d.code} at {d.start.row}:{d.start.column} ({d.fix.message if d.fix else ''})"


def fix_text(source: SourceFile, filename: str, lint: Callable[[SourceFile], list[Diagnostic]],
             options: FixOptions, initial: list[Diagnostic] | None = None) -> tuple[FixReport, list[Diagnostic]]:
    """Fix ``source`` in memory. Returns the report and the diagnostics of the final text.

    ``lint`` analyses a text (a :class:`SourceFile` with the original's encoding and
    newline style) and returns its diagnostics; ``initial`` are the diagnostics of
    ``source`` when already known.
    """
    original = source.text
    diags = list(initial) if initial is not None else lint(source)
    original_diags = diags
    original_compiles = syntax_problem(original, filename) is None
    current = source
    fixed: list[Diagnostic] = []

    def untouched(reason: str) -> tuple[FixReport, list[Diagnostic]]:
        report = FixReport(original=original, text=original, error=reason, passes=passes)
        return report, original_diags

    passes = 0
    while True:
        chosen = applicable(diags, options.unsafe)
        if not chosen:
            break
        if passes >= options.max_passes:
            return untouched(f"the fixes did not converge after {options.max_passes} passes "
                             f"(still fixable: {', '.join(sorted({d.code for d in chosen}))})")
        passes += 1
        new_text, applied = apply_edit_groups(current, _groups(chosen, current.newline))
        if not applied or new_text == current.text:
            break  # nothing applicable changes the text: stop (a no-op fix must not loop)
        problem = syntax_problem(new_text, filename)
        if problem and (original_compiles or "libcst" in problem):
            bad = _culprits(current, chosen, applied, filename)
            who = "; ".join(_describe(d) for d in bad) if bad else \
                "the combination of " + "; ".join(_describe(chosen[i]) for i in applied)
            return untouched(f"applying the fixes would produce invalid code ({problem}); caused by {who}")
        unresolved = introduced_name_problems(current.text, new_text)
        if unresolved:
            bad = [chosen[i] for i in applied if introduced_name_problems(
                current.text, apply_edit_groups(current, _groups([chosen[i]], current.newline))[0])]
            who = "; ".join(_describe(d) for d in bad) if bad else "the combination of the fixes"
            return untouched(f"a fix would refer to something that does not exist "
                             f"({'; '.join(unresolved[:3])}); caused by {who}")
        fixed.extend(chosen[i] for i in applied)
        current = SourceFile(text=new_text, encoding=source.encoding, bom=source.bom, newline=source.newline)
        try:
            diags = lint(current)
        except Exception as exc:  # the analysis crashed on the fixed text
            return untouched(f"analysing the fixed source failed: {type(exc).__name__}: {exc}")
        broken = [d for d in diags if d.code.startswith("DTL0")]
        if broken:
            return untouched(f"analysing the fixed source failed: {broken[0].code} {broken[0].message}")
    report = FixReport(original=original, text=current.text, fixed=fixed, passes=passes)
    if report.changed:
        try:
            report.data = source.to_bytes(current.text)
        except UnicodeEncodeError as exc:
            return untouched(f"the fixed source cannot be encoded as {source.encoding}: {exc.reason}")
    return report, diags
