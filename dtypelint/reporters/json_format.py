"""``--output-format json``: a JSON array of diagnostics (the stable contract for tools)."""

from __future__ import annotations

import json
from typing import TextIO

from dtypelint.reporters import Report, register


@register("json")
def render_json(report: Report, out: TextIO, color: bool) -> None:
    json.dump([d.to_json() for d in report.diagnostics], out, indent=2, ensure_ascii=False)
    out.write("\n")
