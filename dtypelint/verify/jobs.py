"""The work handed to a verify child: one module file and its findings (plain, picklable data).

Built by the parent from ``check``'s diagnostics (no torch); the child verifies each finding
in each regime it names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from dtypelint.context import module_name_for
from dtypelint.diagnostics import Diagnostic, Fix


@dataclass(frozen=True)
class FindingRef:
    """What the verifier uses of a diagnostic: code, where, regimes, fix and dataflow path."""

    key: int  # unique in the run
    code: str
    filename: str  # as reported
    path: str  # absolute
    row: int
    column: int
    end_row: int
    end_column: int
    regimes: tuple[str, ...]
    fix: Fix | None
    steps: tuple[tuple[str, int], ...]  # (absolute file, row) of the dataflow path

    @classmethod
    def of(cls, key: int, d: Diagnostic, path: Path) -> "FindingRef":
        steps = [(str(Path(s.filename).resolve()), s.row) for s in d.path]
        return cls(key, d.code, d.filename, str(path.resolve()), d.start.row, d.start.column, d.end.row,
                   d.end.column, tuple(d.regimes), d.fix, tuple(steps))

    def label(self) -> str:
        return f"{self.code} at {Path(self.filename).name}:{self.row}:{self.column}"


@dataclass
class ModuleJob:
    path: str  # absolute path of the module file
    display: str  # as reported
    module_name: str
    import_root: str
    project_root: str  # where configured harness factories are imported from
    findings: list[FindingRef]
    regimes: dict[int, tuple[str, ...]]  # finding key -> regimes to run
    others: list[FindingRef] = field(default_factory=list)  # every finding of the run (blockers)
    compute_dtype: str = "float16"
    device: str = "cpu"
    harness: tuple[tuple[str, str], ...] = ()
    user_sinks: tuple = ()
    timeout: float = 120.0
    memory_mb: int = 4096


def import_root(path: Path, module_name: str) -> Path:
    """The folder that must be on ``sys.path`` for ``module_name`` to import ``path``."""
    levels = module_name.count(".") + (1 if path.name == "__init__.py" else 0)
    root = path.resolve().parent
    for _ in range(levels):
        root = root.parent
    return root


def module_of(path: Path) -> tuple[str, Path]:
    name = module_name_for(path)
    return name, import_root(path, name)
