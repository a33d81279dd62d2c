"""``--output-format github``: GitHub Actions workflow commands, shown as annotations on the PR diff.

``::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=DTL101 name::message``.
Data is escaped for ``%``, ``\\r`` and ``\\n``; property values also for ``:`` and ``,``
(the runner's own escaping rules, as in ``@actions/core``).
"""

from __future__ import annotations

from typing import TextIO

from dtypelint.reporters import Report, register

LEVELS = {"error": "error", "warning": "warning", "info": "notice", "hint": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d) -> str:
    props = [
        ("file", d.filename),
        ("line", str(d.start.row)),
        ("col", str(d.start.column)),
        ("endLine", str(max(d.end.row, d.start.row))),
    ]
    if d.end.row == d.start.row:  # GitHub only honours columns for single-line annotations
        props.append(("endColumn", str(max(d.end.column, d.start.column))))
    else:
        props = [p for p in props if p[0] != "col"]
    props.append(("title", f"{d.code} {d.name}"))
    message = d.message
    if d.cell is not None:
        message = f"cell {d.cell + 1}, line {d.start.row}: {message}"
    if d.regimes:
        message += f" (breaks in: {', '.join(d.regimes)})"
    if d.path:
        message += "\n" + "\n".join(f"  {i}. {s.filename}:{s.row}:{s.column} {s.message}"
                                    for i, s in enumerate(d.path, 1))
    if d.url:
        message += f"\nSee {d.url}"
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{LEVELS.get(d.severity, 'warning')} {head}::{escape_data(message)}"


@register("github")
def render_github(report: Report, out: TextIO, color: bool) -> None:
    for d in report.diagnostics:
        out.write(annotation(d) + "\n")
