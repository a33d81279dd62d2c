"""Dtype-flow analysis: abstract interpretation per regime and path, with provenance.

The analysis walks the stdlib ``ast`` of a file and emits *sink events* (what reached
an op with a dtype contract, with dtypes, provenance and the path condition); the
rules in ``dtypelint.rules`` judge them.  Entry points:

- ``might_contain_hazard(text, settings)``: cheap text prefilter; False skips parsing.
- ``summarize(text, module_name, filename)``: the file's project-index entry (its
  source, so other files can read its classes, helpers and kernels).
- ``analyse(...)``: the sink events of one file (and the ``FileAnalysis`` they refer to).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dtypelint.diagnostics import REGIMES

# Anything that can produce an fp32 value or a sink, or an import (a helper or kernel from another
# file of the project can return float32 or assert equal dtypes).  A file without a function body,
# or without any of these, cannot have a finding.
_TRIGGERS = re.compile(
    r"torch|Tensor|tensor|dtype|float|half|bfloat|flash|xformers|@|self\.|nn\.|matmul|einsum|scatter|index_|lerp"
    r"|^\s*(?:import|from)\s",
    re.MULTILINE,
)


def trim_caches() -> bool:
    """Bound a long run's memory: drop the caches of other modules past a resident-size budget."""
    from dtypelint.analysis.project import trim_caches as trim

    return trim()


def might_contain_hazard(text: str, settings) -> bool:
    if "def " not in text:
        # a training script can drive autocast / GradScaler at its top level
        from dtypelint.analysis.amp_usage import mentions_amp

        return mentions_amp(text)
    if _TRIGGERS.search(text):
        return True
    sinks = getattr(settings, "sinks", ()) or ()
    return any(s.name.rsplit(".", 1)[-1] in text for s in sinks)


def parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def summarize(text: str, module_name: str, filename: str, tree: ast.Module | None = None) -> dict[str, Any]:
    """Index entries of one file: ``module:<name>`` -> its source (read lazily by the files that import it)."""
    from dtypelint.analysis.project import module_entry, parsed

    if not module_name:
        return {}
    entry = module_entry(text, module_name, filename)
    if tree is not None:
        parsed(text, entry.source_key, tree)  # files that import this one (in this process) reuse the tree
    return {"module:" + module_name: entry}


@dataclass
class Analysis:
    fa: Any  # the FileAnalysis (positions, source text, calls made in the file)
    events: list  # SinkEvents of every entry point, per regime and path


def analyse(text: str, filename: str, module_name: str, settings, index=None, is_package: bool = False,
            path: Path | None = None, tree: ast.Module | None = None, interpret: bool = True,
            amp: bool = True) -> Analysis | None:
    """``interpret``: run the dtype interpreter (the sink events); ``amp``: the training-API usage pass."""
    from dtypelint.analysis.interp import FileAnalysis
    from dtypelint.analysis.project import Project

    from dtypelint.analysis.project import parsed

    tree = parsed(text, tree=tree) if tree is not None else parsed(text)
    if tree is None:
        return None
    project = Project(index, settings, Path(path) if path is not None else None, module_name)
    fa = FileAnalysis(tree, text, filename, module_name, settings, project, is_package=is_package)
    regimes = tuple(r for r in REGIMES if r in (getattr(settings, "regimes", REGIMES) or REGIMES))
    try:
        events = fa.run(regimes) if interpret else []
    except RecursionError:
        # pathologically deep expressions (generated code): no claim rather than a crash
        return None
    from dtypelint.analysis.amp_usage import amp_events

    try:
        if amp:
            events = events + amp_events(fa)  # training-step API usage: syntactic, regime-less events
    except RecursionError:
        pass
    return Analysis(fa, events)
