"""Suppression comments: ``# noqa[: CODES]``, ``# dtypelint: ignore[CODES]``, ``# dtypelint: skip-file``.

A suppression on the reported line, or on the first line of the (multi-line)
statement that contains it, silences the finding.  Comments are found with the
tokenizer so that ``# noqa`` inside a string does not count.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

ALL = "*"
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*dtypelint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_SKIP_FILE = re.compile(r"#\s*dtypelint:\s*skip-file\b", re.I)
_CODE = re.compile(r"[A-Za-z]+[0-9]+")


@dataclass
class Suppressions:
    by_line: dict[int, set[str]] = field(default_factory=dict)  # row -> codes (or {"*"})
    skip_file: bool = False
    statement_start: dict[int, int] = field(default_factory=dict)  # row -> first row of its statement

    def suppresses(self, code: str, row: int) -> bool:
        for line in {row, self.statement_start.get(row, row)}:
            codes = self.by_line.get(line)
            if codes and (ALL in codes or code in codes):
                return True
        return False


def _comments(text: str) -> list[tuple[int, str]]:
    try:
        return [
            (tok.start[0], tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Unfinished code: fall back to a line scan (a '#' inside a string may count).
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            pos = line.find("#")
            if pos >= 0:
                out.append((i, line[pos:]))
        return out


def _statement_starts(text: str) -> dict[int, int]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    starts: dict[int, int] = {}

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                body = getattr(child, "body", None)
                if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                    end = max(child.lineno, body[0].lineno - 1)
                    # decorators: the statement starts at the first decorator
                    first = min([d.lineno for d in getattr(child, "decorator_list", [])] + [child.lineno])
                else:
                    first, end = child.lineno, child.end_lineno or child.lineno
                for row in range(first, end + 1):
                    starts[row] = first
            visit(child)

    visit(tree)
    return {row: first for row, first in starts.items() if row != first}


def parse_suppressions(text: str) -> Suppressions:
    sup = Suppressions()
    if "#" not in text:
        return sup
    for row, comment in _comments(text):
        if _SKIP_FILE.search(comment):
            sup.skip_file = True
        for regex in (_NOQA, _IGNORE):
            for m in regex.finditer(comment):
                codes = m.group("codes")
                found = {c.upper() for c in _CODE.findall(codes)} if codes else {ALL}
                sup.by_line.setdefault(row, set()).update(found or {ALL})
    if sup.by_line:
        sup.statement_start = _statement_starts(text)
    return sup
