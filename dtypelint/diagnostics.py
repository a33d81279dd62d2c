"""The diagnostic model shared by the engine, rules, reporters, fixer and LSP.

Everything here is plain, picklable data: diagnostics cross process boundaries
(parallel workers), live in the on-disk cache and are serialised to JSON, so
they carry no CST nodes.  Rows and columns are 1-based; columns count Unicode
code points, like ruff.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

REGIMES = ("autocast", "half", "loaded")
SEVERITIES = ("error", "warning", "info", "hint")
APPLICABILITIES = ("safe", "unsafe")
DOCS_BASE_URL = "https://dtypelint.readthedocs.io/en/latest/rules/"


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based (row, column) point in a file."""

    row: int
    column: int

    def to_json(self) -> dict[str, int]:
        return {"row": self.row, "column": self.column}


@dataclass(frozen=True)
class PathStep:
    """One step of the dataflow path from the fp32 source to the sink."""

    filename: str
    row: int
    column: int
    message: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Edit:
    """Replace the text between ``start`` (inclusive) and ``end`` (exclusive)."""

    content: str
    start: Position
    end: Position

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "location": self.start.to_json(),
            "end_location": self.end.to_json(),
        }


@dataclass(frozen=True)
class Fix:
    """A proposed change: a title, its applicability and the text edits."""

    applicability: str  # "safe" | "unsafe"
    message: str
    edits: tuple[Edit, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }


@dataclass(frozen=True)
class Diagnostic:
    """One finding: where, what, in which regimes it breaks, why, and how to fix it."""

    code: str
    name: str
    message: str
    severity: str
    filename: str
    start: Position
    end: Position
    regimes: tuple[str, ...] = ()
    path: tuple[PathStep, ...] = ()
    fix: Fix | None = None
    url: str = ""
    # Notebook cell index (0-based) when the file is a notebook; None otherwise.
    cell: int | None = None
    # The path clauses under which it breaks ("`cache is None`"), when only some paths do.
    condition: str = ""
    # Extra data a reporter may use (e.g. the enclosing scope for baselines).
    extra: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def sort_key(self) -> tuple:
        return (self.filename, self.start.row, self.start.column, self.code)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity,
            "filename": self.filename,
            "location": self.start.to_json(),
            "end_location": self.end.to_json(),
            "regimes": list(self.regimes),
            "path": [s.to_json() for s in self.path],
            "fix": self.fix.to_json() if self.fix else None,
            "url": self.url,
        }
        if self.condition:
            out["condition"] = self.condition
        if self.cell is not None:
            out["cell"] = self.cell
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Diagnostic":
        fix = data.get("fix")
        return cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            severity=data["severity"],
            filename=data["filename"],
            start=Position(**data["location"]),
            end=Position(**data["end_location"]),
            regimes=tuple(data.get("regimes", ())),
            path=tuple(PathStep(**s) for s in data.get("path", ())),
            fix=None
            if not fix
            else Fix(
                applicability=fix["applicability"],
                message=fix["message"],
                edits=tuple(
                    Edit(e["content"], Position(**e["location"]), Position(**e["end_location"]))
                    for e in fix["edits"]
                ),
            ),
            url=data.get("url", ""),
            cell=data.get("cell"),
            condition=data.get("condition", ""),
        )


def rule_url(code: str, name: str) -> str:
    """The documentation URL of a rule (also rendered under ``docs/rules/``)."""
    return f"{DOCS_BASE_URL}{code}-{name}/"
