"""Dtype-flow analysis: abstract interpretation per regime, with provenance.

The engine calls three functions:
- ``might_contain_hazard(text, settings)``: cheap text prefilter; False skips parsing.
- ``summarize(text, module_name, filename, tree=...)``: project-index entries for this file
  (class facts, function / ``forward`` summaries, dtype-strict callees).
- ``check(ctx)``: the diagnostics of one parsed file.

The analysis walks the stdlib ``ast`` of the file, parsed once by the engine and shared
by ``summarize`` and ``check`` (``ctx.tree``); without a tree they parse the text.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from dtypelint.config import Settings
from dtypelint.context import CheckContext
from dtypelint.diagnostics import REGIMES, Diagnostic

RULE_CODES = ("DTL101", "DTL102", "DTL103", "DTL104", "DTL105", "DTL106")

# Anything that can produce an fp32 value or a sink, or an import (a helper or kernel from another
# file of the project can return float32 or assert equal dtypes).  A file without a function body,
# or without any of these, cannot have a finding.
_TRIGGERS = re.compile(
    r"torch|Tensor|tensor|dtype|float|half|bfloat|flash|xformers|@|self\.|nn\.|matmul|einsum|scatter|index_|lerp"
    r"|^\s*(?:import|from)\s",
    re.MULTILINE,
)


def might_contain_hazard(text: str, settings: Settings | None) -> bool:
    if "def " not in text:
        return False
    if _TRIGGERS.search(text):
        return True
    sinks = getattr(settings, "sinks", ()) or ()
    return any(s.name.rsplit(".", 1)[-1] in text for s in sinks)


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def summarize(text: str, module_name: str, filename: str, lazy: bool = True,
              tree: ast.Module | None = None) -> dict[str, Any]:
    """Index entries: ``pkg.mod.Class`` -> ClassFacts, ``pkg.mod.func`` / ``pkg.mod.Class.forward`` -> FuncSummary."""
    from dtypelint.analysis.interpreter import FileAnalysis
    from dtypelint.analysis.summaries import lazy_summary, source_key, summarisable, summarize_function

    tree = tree if tree is not None else _parse(text)
    if tree is None:
        return {}
    is_package = filename.endswith("__init__.py")
    fa = FileAnalysis(tree, text, filename, module_name, None, None, is_package=is_package)
    out: dict[str, Any] = {}
    key = source_key(text) if lazy else ""
    try:
        for name, (cnode, facts) in fa.classes.items():
            out[facts.qname] = facts
        for qname, (fn, cls) in summarisable(fa).items():
            out[qname] = lazy_summary(fa, fn, cls, qname, key) if lazy else summarize_function(fa, fn, cls, qname)
    except RecursionError:
        pass  # keep what was summarised; deeper calls into this file are then unknown
    return out


def analyse(text: str, filename: str, module_name: str, settings, index=None, enabled=None,
            is_package: bool = False, tree: ast.Module | None = None) -> list[Diagnostic]:
    from dtypelint.analysis.interpreter import FileAnalysis
    from dtypelint.analysis.rules import to_diagnostics

    tree = tree if tree is not None else _parse(text)
    if tree is None:
        return []
    fa = FileAnalysis(tree, text, filename, module_name, settings, index, is_package=is_package)
    regimes = tuple(r for r in REGIMES if r in (getattr(settings, "regimes", REGIMES) or REGIMES))
    try:
        raw = fa.run(regimes)
    except RecursionError:
        # pathologically deep expressions (generated code): no claim rather than a crash
        return []
    return to_diagnostics(fa, raw, enabled)


def check(ctx: CheckContext) -> list[Diagnostic]:
    enabled = ctx.enabled
    if enabled is not None and not any(c in enabled for c in RULE_CODES):
        return []
    is_package = ctx.path is not None and ctx.path.name == "__init__.py"
    return analyse(ctx.source.text, ctx.filename, ctx.module_name, ctx.settings, ctx.index, enabled, is_package,
                   tree=ctx.tree)
