"""Render verify results: a rich table plus one line per finding (``full``), or JSON."""

from __future__ import annotations

import json
from typing import TextIO

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from dtypelint.verify.results import VerifyResult, counts

STYLE = {"reproduced": "bold red", "not-reproduced": "yellow", "not-run": "dim"}


def _fixed(r: VerifyResult) -> str:
    return {True: "yes", False: "no", None: "-"}[r.fixed]


def _err(r: VerifyResult) -> str:
    return f"{r.max_abs_err:.2g}" if r.max_abs_err is not None else "-"


def summary(results: list[VerifyResult]) -> str:
    c = counts(results)
    if not results:
        return "No findings to verify."
    n = c["total"]
    return (f"{n} {'finding' if n == 1 else 'findings'} verified (a finding per regime): "
            f"{c['reproduced']} reproduced ({c['fixed']} fixed), {c['not-reproduced']} not reproduced, "
            f"{c['not-run']} not run.")


def line(r: VerifyResult) -> str:
    text = f"{r.filename}:{r.row}:{r.column}: {r.code} [{r.regime}, {r.device}] {r.status}"
    if r.detail:
        text += f": {r.detail}"
    if r.reproduced:
        text += f"; fixed: {_fixed(r)}"
        if r.fix_detail:
            text += f" ({r.fix_detail})"
    if r.with_fixes:
        text += f"; with the fixes of {', '.join(r.with_fixes)}"
    if r.harness:
        text += f"; harness: {r.harness}"
    return text


def render_full(results: list[VerifyResult], stream: TextIO, color: bool) -> None:
    results = sorted(results, key=VerifyResult.sort_key)
    console = Console(file=stream, no_color=not color, highlight=False, force_terminal=color,
                      width=None if color else 200, soft_wrap=False)
    if results:
        table = Table(show_lines=False)
        for col in ("Location", "Code", "Regime", "Device", "Status", "Fixed", "Output", "Max abs err"):
            table.add_column(col, overflow="fold")
        for r in results:
            table.add_row(escape(f"{r.filename}:{r.row}:{r.column}"), r.code, r.regime, r.device,
                          f"[{STYLE[r.status]}]{r.status}[/]", _fixed(r),
                          (r.output_dtype or "-").replace("torch.", ""), _err(r))
        console.print(table)
        for r in results:
            console.print(escape(line(r)), soft_wrap=True)
    console.print(summary(results), soft_wrap=True)


def render_json(results: list[VerifyResult], stream: TextIO, color: bool = False) -> None:
    data = [r.to_json() for r in sorted(results, key=VerifyResult.sort_key)]
    stream.write(json.dumps(data, indent=2) + "\n")


RENDERERS = {"full": render_full, "json": render_json}
