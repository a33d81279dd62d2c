"""The catalog examples of DTL101-DTL105, checked directly against the analysis (with fixes applied)."""
import sys
from dataclasses import replace
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from dtypelint.config import Settings
from dtypelint.edits import apply_edit_groups
from dtypelint.source import SourceFile
from analysis_helpers import lint_text

RULES = Path(__file__).resolve().parent.parent / "rules"
CASES = []
for code in ("DTL101", "DTL102", "DTL103", "DTL104", "DTL105", "DTL106", "DTL107", "DTL108", "DTL109", "DTL110",
             "DTL111", "DTL112", "DTL113", "DTL114", "DTL115", "DTL201", "DTL202", "DTL203", "DTL204", "DTL205"):
    data = tomllib.loads((RULES / f"{code}.toml").read_text())
    for i, ex in enumerate(data.get("invalid", [])):
        CASES.append((code, "invalid", i, ex))
    for i, ex in enumerate(data.get("valid", [])):
        CASES.append((code, "valid", i, ex))


def settings_for(ex):
    s = Settings(root=Path("."))
    cd = ex.get("config", {}).get("compute-dtype")
    return replace(s, compute_dtype=cd) if cd else s


@pytest.mark.parametrize("code,kind,i,ex", CASES, ids=[f"{c}-{k}-{i}" for c, k, i, _ in CASES])
def test_example(code, kind, i, ex):
    settings = settings_for(ex)
    diags = lint_text(ex["code"], settings)
    if kind == "valid":
        assert diags == []
        return
    mine = [d for d in diags if d.code == code]
    assert sorted(d.start.row for d in mine) == sorted(ex["lines"])
    if "regimes" in ex:
        assert sorted({r for d in mine for r in d.regimes}) == sorted(ex["regimes"])
    if "fixed" in ex:
        fixed, _ = apply_edit_groups(SourceFile(ex["code"]), [d.fix.edits for d in diags if d.fix])
        assert fixed == ex["fixed"]
        assert all(d.fix.applicability == ("unsafe" if ex.get("unsafe") else "safe") for d in mine)
        assert lint_text(fixed, settings) == []  # idempotent
