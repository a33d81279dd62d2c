"""What ``dtypelint verify`` reports for one finding in one regime.

Plain data (no torch): results cross the pipe from the child process as JSON
lines, and the reporters render them.  ``status`` is one of:

- ``reproduced``: the failure or contract violation the finding predicts happened, and it
  traces to the flagged statement (or a statement on its dataflow path);
- ``not-reproduced``: the flagged code ran (or failed for another reason) without it;
- ``not-run``: no harness could be built or run (the reason is in ``detail``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUSES = ("reproduced", "not-reproduced", "not-run")


@dataclass
class VerifyResult:
    code: str
    filename: str  # as reported by ``check``
    row: int
    column: int
    regime: str
    status: str = "not-run"
    device: str = "cpu"  # "cpu", "cuda" or "fake-cuda"
    fixed: bool | None = None  # None: not reproduced, not run, or the finding has no fix
    detail: str = ""  # one line: the evidence (error, contract, where) or why it could not run
    fix_detail: str = ""  # one line: what the fixed code did
    output_dtype: str | None = None  # of the fixed run when it ran, else of the original run
    max_abs_err: float | None = None  # fixed output against an fp32 reference with the same weights
    max_rel_err: float | None = None
    harness: str = ""  # how the module was built and called
    with_fixes: list[str] = field(default_factory=list)  # other findings' fixes applied to get past them
    seconds: float = 0.0

    @property
    def reproduced(self) -> bool:
        return self.status == "reproduced"

    @property
    def ran(self) -> bool:
        return self.status != "not-run"

    @property
    def passed(self) -> bool:
        """Reproduced and fixed (what exit code 0 requires of every finding that ran)."""
        return self.reproduced and self.fixed is True

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "filename": self.filename,
            "location": {"row": self.row, "column": self.column},
            "regime": self.regime,
            "device": self.device,
            "status": self.status,
            "reproduced": self.reproduced,
            "fixed": self.fixed,
            "detail": self.detail,
            "fix_detail": self.fix_detail,
            "output_dtype": self.output_dtype,
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "harness": self.harness,
            "with_fixes": list(self.with_fixes),
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "VerifyResult":
        loc = data.get("location", {})
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known.update(row=loc.get("row", 0), column=loc.get("column", 0))
        return cls(**known)

    def sort_key(self) -> tuple:
        return (self.filename, self.row, self.column, self.code, self.regime)


def exit_code(results: list[VerifyResult]) -> int:
    """0 when every finding that ran was reproduced and fixed, else 1."""
    return 0 if all(r.passed for r in results if r.ran) else 1


def counts(results: list[VerifyResult]) -> dict[str, int]:
    out = {s: 0 for s in STATUSES}
    for r in results:
        out[r.status] += 1
    out["fixed"] = sum(1 for r in results if r.fixed is True)
    out["total"] = len(results)
    return out

