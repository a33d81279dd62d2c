"""``--output-format concise``: one line per finding, ``path:row:col: CODE [*] message``."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape

from dtypelint.reporters import Report, is_fixable, register, summary_line


def location(d) -> str:
    if d.cell is not None:  # notebooks: the cell as Jupyter numbers it, then the row in the cell
        return f"{d.filename}:cell {d.cell + 1}:{d.start.row}:{d.start.column}"
    return f"{d.filename}:{d.start.row}:{d.start.column}"


@register("concise")
def render_concise(report: Report, out: TextIO, color: bool) -> None:
    console = Console(file=out, force_terminal=color, no_color=not color, highlight=False, soft_wrap=True)
    for d in report.diagnostics:
        mark = " [*]" if is_fixable(d, report.unsafe_fixes) else ""
        regimes = f" [{', '.join(d.regimes)}]" if d.regimes else ""
        console.print(
            f"[bold]{escape(location(d))}[/]: [bold red]{d.code}[/]{escape(mark)} {escape(d.message)}"
            f"[dim]{escape(regimes)}[/]"
        )
    console.print(escape(summary_line(report)))
