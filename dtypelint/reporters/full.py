"""``--output-format full`` (default): each finding with a code frame, the dataflow
path, the regimes in which it breaks, the suggested fix and the rule's docs link."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.markup import escape

from dtypelint.reporters import Report, is_fixable, register, summary_line

REGIME_TEXT = {
    "autocast": "autocast (fp32 parameters, forward under CUDA autocast fp16/bf16)",
    "half": "half (model converted with .half() / .to(torch.float16), no autocast)",
    "loaded": "loaded (built in fp16/bf16 except explicit fp32 choices and _keep_in_fp32_modules)",
}
CONTEXT = 2


def code_frame(lines: list[str], d) -> list[str]:
    """Source lines around the finding with carets under its span, ruff-style."""
    if not lines or d.start.row > len(lines):
        return []
    first = max(1, d.start.row - CONTEXT)
    last = min(len(lines), d.start.row + (1 if d.end.row == d.start.row else 0))
    last = max(last, min(len(lines), d.start.row))
    width = len(str(last))
    out = [f"{' ' * width} [blue]|[/]"]
    for row in range(first, last + 1):
        out.append(f"[blue]{row:>{width}} |[/] {escape(lines[row - 1])}")
        if row == d.start.row:
            text = lines[row - 1]
            start = max(0, d.start.column - 1)
            end = d.end.column - 1 if d.end.row == row else len(text)
            length = max(1, end - start)
            out.append(f"{' ' * width} [blue]|[/] {' ' * start}[bold red]{'^' * length} {d.code}[/]")
    out.append(f"{' ' * width} [blue]|[/]")
    return out


@register("full")
def render_full(report: Report, out: TextIO, color: bool) -> None:
    console = Console(file=out, force_terminal=color, no_color=not color, highlight=False, soft_wrap=True)
    cache: dict[str, list[str]] = {}
    for d in report.diagnostics:
        mark = " [*]" if is_fixable(d, report.unsafe_fixes) else ""
        loc = f"{d.filename}:{d.start.row}:{d.start.column}"
        if d.cell is not None:
            loc = f"{d.filename}:cell {d.cell + 1}:{d.start.row}:{d.start.column}"
        console.print(f"[bold]{escape(loc)}[/]: [bold red]{d.code}[/]{escape(mark)} {escape(d.message)}")
        if d.cell is None:
            lines = cache.setdefault(d.filename, report.source_lines(d.filename))
            for line in code_frame(lines, d):
                console.print(line)
        if d.path:
            console.print("  [cyan]= path:[/]")
            for i, step in enumerate(d.path, 1):
                console.print(f"      {i}. [bold]{escape(f'{step.filename}:{step.row}:{step.column}')}[/] {escape(step.message)}")
        if d.regimes:
            when = "; ".join(REGIME_TEXT.get(r, r) for r in d.regimes)
            if d.condition:
                when += f"; on the path where {d.condition}"
            console.print("  [cyan]= breaks when:[/] " + escape(when))
        if d.fix:
            console.print(f"  [cyan]= fix ({d.fix.applicability}):[/] {escape(d.fix.message)}")
        if d.url:
            console.print(f"  [cyan]= docs:[/] {escape(d.url)}")
        console.print("")
    console.print(escape(summary_line(report)))
