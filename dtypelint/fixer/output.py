"""What fix mode prints: unified diffs (``--diff``) and the ``--show-fixes`` listing."""

from __future__ import annotations

import difflib
from collections import Counter
from typing import Iterable

from dtypelint.diagnostics import Diagnostic

NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(original: str, new: str, filename: str, context: int = 3) -> str:
    """A unified diff that ``patch``/``git apply`` accept (marks a missing final newline)."""
    a = original.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out = []
    relative = not (filename.startswith("/") or filename[1:3] in (":\\", ":/"))
    old, new_name = (f"a/{filename}", f"b/{filename}") if relative else (filename, filename)
    for line in difflib.unified_diff(a, b, fromfile=old, tofile=new_name, n=context):
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n" + NO_NEWLINE)
    return "".join(out)


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return word if n == 1 else (plural or word + "s")


def fixes_listing(fixed_by_file: Iterable[tuple[str, list[Diagnostic]]], would: bool = False) -> str:
    """ruff-style listing of the applied fixes, per file and rule, with each fix's title."""
    rows = [(f, ds) for f, ds in fixed_by_file if ds]
    total = sum(len(ds) for _, ds in rows)
    if not total:
        return "No findings would be fixed.\n" if would else "No findings were fixed.\n"
    verb = "Would fix" if would else "Fixed"
    lines = [f"{verb} {total} {_plural(total, 'finding')}:"]
    for filename, ds in sorted(rows):
        lines.append(f"- {filename}:")
        counts = Counter((d.code, d.name, d.fix.message if d.fix else "") for d in ds)
        width = len(str(max(counts.values())))
        for (code, name, title), n in sorted(counts.items()):
            lines.append(f"    {n:>{width}} × {code} ({name}): {title}".rstrip(": "))
    return "\n".join(lines) + "\n"
