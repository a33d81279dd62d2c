"""Reporters turn a run's diagnostics into text for people and tools.

Each output format is a function ``(report, stream, color) -> None`` registered in
``REPORTERS``; the CLI picks one with ``--output-format``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from dtypelint.diagnostics import Diagnostic


@dataclass
class Report:
    diagnostics: list[Diagnostic]
    files_checked: int = 0
    unsafe_fixes: bool = False  # unsafe fixes are enabled (count them as fixable)
    fixed: int = 0  # fixes applied by --fix in this run
    texts: dict[str, str] = field(default_factory=dict)  # in-memory sources (stdin, notebooks)
    baselined: int = 0  # findings hidden by --baseline

    def source_lines(self, filename: str) -> list[str]:
        if filename in self.texts:
            return self.texts[filename].splitlines()
        try:
            if not Path(filename).is_file():  # a FIFO or a device would block the report
                return []
            return Path(filename).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []

    def fixable(self) -> tuple[int, int]:
        """(fixable now, hidden unsafe fixes)."""
        safe = sum(1 for d in self.diagnostics if d.fix and d.fix.applicability == "safe")
        unsafe = sum(1 for d in self.diagnostics if d.fix and d.fix.applicability == "unsafe")
        return (safe + unsafe, 0) if self.unsafe_fixes else (safe, unsafe)


Reporter = Callable[[Report, TextIO, bool], None]
REPORTERS: dict[str, Reporter] = {}


def register(name: str) -> Callable[[Reporter], Reporter]:
    def deco(fn: Reporter) -> Reporter:
        REPORTERS[name] = fn
        return fn

    return deco


def is_fixable(d: Diagnostic, unsafe: bool) -> bool:
    return d.fix is not None and (d.fix.applicability == "safe" or unsafe)


def summary_line(report: Report) -> str:
    n = len(report.diagnostics)
    fixable, hidden = report.fixable()
    if n == 0:
        parts = ["All checks passed!"]
        if report.fixed:
            parts = [f"Found {report.fixed} {_plural(report.fixed, 'finding')} ({report.fixed} fixed, 0 remaining)."]
        if report.baselined:
            parts.append(f"({report.baselined} baselined {_plural(report.baselined, 'finding')} hidden.)")
        return " ".join(parts)
    if report.fixed:
        head = f"Found {n + report.fixed} {_plural(n + report.fixed, 'finding')} ({report.fixed} fixed, {n} remaining)."
    else:
        head = f"Found {n} {_plural(n, 'finding')} in {report.files_checked} {_plural(report.files_checked, 'file')} checked."
    tail = []
    if report.baselined:
        tail.append(f"{report.baselined} baselined {_plural(report.baselined, 'finding')} hidden.")
    if fixable:
        tail.append(f"[*] {fixable} fixable with the `--fix` option.")
    if hidden:
        tail.append(f"{hidden} hidden {_plural(hidden, 'fix', 'fixes')} can be enabled with the `--unsafe-fixes` option.")
    return " ".join([head, *tail])


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return word if n == 1 else (plural or word + "s")


from dtypelint.reporters import concise, full, json_format  # noqa: E402,F401  (registration)
from dtypelint.reporters import github, gitlab, html, junit, lsp_json, sarif  # noqa: E402,F401  (registration)
