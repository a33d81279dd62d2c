"""``--statistics``: how many findings each rule produced and how many of them ``--fix`` can fix.

Like ruff's ``--statistics``: one line per rule, most frequent first, instead of the
findings; ``--output-format json`` gives the same table as a JSON array.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TextIO

from dtypelint.reporters import Report


def statistics(report: Report) -> list[dict]:
    """Per rule: code, name, count, fixable (with the current --unsafe-fixes) and unsafe-only fixes."""
    count: Counter[str] = Counter()
    safe: Counter[str] = Counter()
    unsafe: Counter[str] = Counter()
    names: dict[str, str] = {}
    for d in report.diagnostics:
        count[d.code] += 1
        names[d.code] = d.name
        if d.fix is not None and d.fix.edits:
            (safe if d.fix.applicability == "safe" else unsafe)[d.code] += 1
    rows = []
    for code, n in sorted(count.items(), key=lambda kv: (-kv[1], kv[0])):
        fixable = safe[code] + (unsafe[code] if report.unsafe_fixes else 0)
        rows.append({"code": code, "name": names[code], "count": n, "fixable": fixable,
                     "unsafe_fixes": 0 if report.unsafe_fixes else unsafe[code]})
    return rows


def render_statistics(report: Report, out: TextIO, as_json: bool = False) -> None:
    rows = statistics(report)
    if as_json:
        out.write(json.dumps(rows, indent=2) + "\n")
        return
    if not rows:
        out.write("No findings.\n")
        return
    width = max(len(str(r["count"])) for r in rows)
    name_width = max(len(r["name"]) for r in rows)
    for r in rows:
        mark = "[*]" if r["fixable"] == r["count"] else "[-]" if r["fixable"] else "[ ]"
        fixes = f"{r['fixable']} fixable"
        if r["unsafe_fixes"]:
            fixes += f", {r['unsafe_fixes']} with --unsafe-fixes"
        out.write(f"{r['count']:>{width}}  {r['code']}  {mark} {r['name']:<{name_width}}  ({fixes})\n")
    total = sum(r["count"] for r in rows)
    fixable = sum(r["fixable"] for r in rows)
    out.write(f"Found {total} {'finding' if total == 1 else 'findings'}; [*] {fixable} fixable with the `--fix` option.\n")
