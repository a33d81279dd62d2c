"""What the engine hands to the analysis for one file (the engine/analysis seam).

The file is parsed once, by the engine, with CPython's ``ast``; the analysis reads ``tree``
and never parses the text again.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from dtypelint.config import Settings
from dtypelint.index import IndexView
from dtypelint.source import SourceFile


@dataclass
class CheckContext:
    filename: str  # as reported (relative to cwd where possible, or --stdin-filename)
    path: Path | None  # on-disk path, None for stdin
    module_name: str  # dotted module name, e.g. "mypkg.models.attention"
    source: SourceFile
    tree: ast.Module  # the parsed ``source.text``
    settings: Settings
    enabled: frozenset[str]  # rule codes enabled for this file
    index: IndexView


def module_name_for(path: Path) -> str:
    """Dotted module name: walk up while the folder is a package (has ``__init__.py``)."""
    path = path.resolve()
    parts = [path.stem] if path.stem != "__init__" else []
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.append(folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    return ".".join(reversed(parts)) or path.stem
