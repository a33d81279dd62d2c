"""Helpers for the analysis tests: run summarize + check over files like the engine does."""
from __future__ import annotations

import re
from pathlib import Path

from dtypelint.analysis import summarize
from dtypelint.rules import analyse
from dtypelint.config import Settings
from dtypelint.context import module_name_for
from dtypelint.index import ProjectIndex

EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


def lint_files(paths, settings=None):
    """{path: [Diagnostic]} for the given files, with a project index over all of them."""
    settings = settings or Settings(root=Path("."))
    paths = [Path(p) for p in paths]
    parts = []
    mods = {}
    for p in paths:
        mod = module_name_for(p)
        mods[p] = mod
        parts.append(summarize(p.read_text(), mod, str(p)))
    index = ProjectIndex.merge(parts)
    out = {}
    for p in paths:
        out[p] = analyse(p.read_text(), str(p), mods[p], settings, index.view(),
                         is_package=p.name == "__init__.py", path=p)
    return out


def lint_text(text, settings=None, module_name="snippet", filename="snippet.py"):
    settings = settings or Settings(root=Path("."))
    index = ProjectIndex.merge([summarize(text, module_name, filename)])
    return analyse(text, filename, module_name, settings, index.view())


def expectations(path):
    out = set()
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        m = EXPECT.search(line)
        if m:
            for code in m.group(1).split(","):
                if code.strip():
                    out.add((i, code.strip()))
    return out
