"""Dtype-flow analysis (placeholder until the analysis lands).

The engine calls three functions:
- ``might_contain_hazard(text, settings)``: cheap text prefilter; False skips parsing.
- ``summarize(text, module_name, filename)``: project-index entries for this file.
- ``check(ctx)``: the diagnostics of one parsed file.
"""

from __future__ import annotations

from typing import Any

from dtypelint.config import Settings
from dtypelint.context import CheckContext
from dtypelint.diagnostics import Diagnostic


def might_contain_hazard(text: str, settings: Settings) -> bool:
    return "torch" in text or any(s.name.rsplit(".", 1)[-1] in text for s in settings.sinks)


def summarize(text: str, module_name: str, filename: str) -> dict[str, Any]:
    return {}


def check(ctx: CheckContext) -> list[Diagnostic]:
    return []
