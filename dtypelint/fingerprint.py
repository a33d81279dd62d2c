"""Content fingerprints of findings: stable when lines move, different when the code changes.

A finding's fingerprint is built from its rule code, the qualified name of the
enclosing scope (``Attention.forward``; ``<module>`` at top level), the text of
the statement that holds it with whitespace and comments normalised away, and an
occurrence number among findings that share all three (two identical flagged
statements in one function stay two findings).  Line numbers are not part of it,
so inserting code above a finding keeps it matched (ruff#1149's objection to
line-keyed baselines).  The baseline, SARIF ``partialFingerprints`` and the GitLab
code-quality ``fingerprint`` all use it.
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from dtypelint.diagnostics import Diagnostic

FINGERPRINT_VERSION = "1"


@dataclass(frozen=True)
class Anchor:
    """What a fingerprint is made of (kept for baselines: readable, diffable)."""

    code: str
    filename: str
    scope: str
    statement: str
    occurrence: int

    def digest(self) -> str:
        payload = "\x1f".join([FINGERPRINT_VERSION, self.code, self.filename, self.scope, self.statement,
                               str(self.occurrence)])
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:32]


def normalise_statement(text: str) -> str:
    """Statement text without comments, line continuations and insignificant whitespace."""
    try:
        out = []
        prev_end: tuple[int, int] | None = None
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            # keep one space only where two names/numbers would otherwise merge
            if out and prev_end is not None and tok.start != prev_end and (
                    out[-1][-1:].isalnum() or out[-1][-1:] == "_") and (tok.string[:1].isalnum() or tok.string[:1] == "_"):
                out.append(" ")
            out.append(tok.string)
            prev_end = tok.end
        return "".join(out)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return " ".join(text.split())


class SourceFacts:
    """Scopes and statement spans of one source text, for anchoring findings."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self._scopes: list[tuple[int, int, str]] = []  # (first row, last row, qualname)
        self._stmts: list[tuple[int, int]] = []  # (first row, last row) of innermost simple statements
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        try:
            self._walk(tree, "")
        except RecursionError:
            self._scopes, self._stmts = [], []

    def _walk(self, node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([d.lineno for d in child.decorator_list] + [child.lineno])
                self._scopes.append((first, child.end_lineno or child.lineno, name))
                header_end = child.body[0].lineno - 1 if child.body else child.lineno
                self._stmts.append((first, max(child.lineno, header_end)))
                self._walk(child, name + ".")
            elif isinstance(child, ast.stmt):
                body = getattr(child, "body", None)
                if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                    # compound statement: its header is a statement of its own
                    self._stmts.append((child.lineno, max(child.lineno, body[0].lineno - 1)))
                    self._walk(child, prefix)
                else:
                    self._stmts.append((child.lineno, child.end_lineno or child.lineno))
            else:
                self._walk(child, prefix)

    def scope(self, row: int) -> str:
        best = "<module>"
        best_size = None
        for first, last, name in self._scopes:
            if first <= row <= last and (best_size is None or last - first <= best_size):
                best, best_size = name, last - first
        return best

    def statement(self, row: int) -> str:
        best: tuple[int, int] | None = None
        for first, last in self._stmts:
            if first <= row <= last and (best is None or last - first < best[1] - best[0]):
                best = (first, last)
        if best is None:
            best = (row, row)
        text = "\n".join(self.lines[best[0] - 1: best[1]])
        return normalise_statement(text)


def anchors(diagnostics: Iterable[Diagnostic], text_of: Callable[[Diagnostic], str | None]) -> list[Anchor]:
    """One anchor per diagnostic (same order).  ``text_of`` returns the source the rows refer to."""
    facts: dict[tuple[str, int | None], SourceFacts | None] = {}
    seen: dict[tuple, int] = {}
    out: list[Anchor] = []
    for d in diagnostics:
        key = (d.filename, d.cell)
        if key not in facts:
            text = text_of(d)
            facts[key] = SourceFacts(text) if text is not None else None
        f = facts[key]
        if f is None or d.code.startswith("DTL0"):
            # could-not-analyse problems: the file and the message identify them
            scope, stmt = "<file>", " ".join(d.message.split())
        else:
            scope, stmt = f.scope(d.start.row), f.statement(d.start.row)
        if d.cell is not None:
            scope = f"<cell>:{scope}"
        base = (d.code, d.filename, scope, stmt)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(Anchor(d.code, d.filename, scope, stmt, n))
    return out


def default_text_of(texts: dict[str, str] | None = None) -> Callable[[Diagnostic], str | None]:
    """Read the source a diagnostic's rows refer to (a notebook's cell for notebook findings)."""
    texts = texts or {}
    cache: dict[str, str | None] = {}

    def read(filename: str) -> str | None:
        if filename in texts:
            return texts[filename]
        if filename not in cache:
            try:
                is_file = Path(filename).is_file()  # a FIFO or a device would block
                cache[filename] = Path(filename).read_bytes().decode("utf-8", errors="replace") if is_file else None
            except OSError:
                cache[filename] = None
        return cache[filename]

    def text_of(d: Diagnostic) -> str | None:
        text = read(d.filename)
        if text is None or d.cell is None:
            return text
        from dtypelint.source.notebook import cell_source

        return cell_source(text, d.cell)

    return text_of


def fingerprints(diagnostics: list[Diagnostic], texts: dict[str, str] | None = None) -> list[str]:
    return [a.digest() for a in anchors(diagnostics, default_text_of(texts))]

