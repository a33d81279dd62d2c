"""The rule catalog is complete, and every rule's examples behave as documented.

Invalid examples must fire (on the given lines, in the given regimes) and their
fixes must produce exactly the documented source, which must parse and be quiet
on re-analysis; valid examples must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from dtypelint.catalog import load_catalog
from dtypelint.config import Settings, settings_from_table
from dtypelint.edits import apply_edit_groups
from dtypelint.engine import known_codes, lint_source
from dtypelint.source import SourceFile

CATALOG = load_catalog()
HAZARD_RULES = [spec for code, spec in CATALOG.items() if not code.startswith("DTL0")]
FULL_SECTIONS = ("what_it_does", "why_is_this_bad", "example", "use_instead", "fix_safety", "options", "references")
BASIC_SECTIONS = ("what_it_does", "why_is_this_bad", "example", "use_instead", "fix_safety")


def settings_for(config: dict) -> Settings:
    return settings_from_table(config, None, Path.cwd(), known_codes()) if config else Settings(root=Path.cwd())


def findings(code: str, text: str, config: dict):
    return [d for d in lint_source(text, "example.py", settings_for(config)) if d.code == code]


def apply_fixes(code: str, text: str, config: dict, passes: int = 10) -> str:
    for _ in range(passes):
        diags = [d for d in findings(code, text, config) if d.fix]
        if not diags:
            return text
        text, applied = apply_edit_groups(SourceFile(text=text), [d.fix.edits for d in diags])
        if not applied:
            return text
    raise AssertionError(f"fixes for {code} did not converge in {passes} passes")


def test_codes_and_names_are_unique():
    names = [s.name for s in CATALOG.values()]
    assert len(set(names)) == len(names)
    assert all(code.startswith("DTL") and len(code) == 6 for code in CATALOG)


@pytest.mark.parametrize("spec", CATALOG.values(), ids=lambda s: s.code)
def test_docs_have_the_fixed_sections(spec):
    required = BASIC_SECTIONS if spec.code.startswith("DTL0") else FULL_SECTIONS
    missing = [s for s in required if not spec.docs.get(s, "").strip()]
    assert not missing, f"{spec.code} lacks doc sections {missing}"
    md = spec.render_markdown()
    assert md.startswith(f"# {spec.name} ({spec.code})")


@pytest.mark.parametrize("spec", HAZARD_RULES, ids=lambda s: s.code)
def test_hazard_rules_have_enough_examples(spec):
    assert len(spec.invalid) >= 2 and len(spec.valid) >= 2, spec.code
    assert spec.regimes, f"{spec.code} must say which regimes it concerns"
    if spec.fix != "none":
        assert any(ex.fixed for ex in spec.invalid), f"{spec.code} offers fixes but no example shows one"


def _examples(kind: str):
    for spec in CATALOG.values():
        for i, ex in enumerate(getattr(spec, kind)):
            yield pytest.param(spec, ex, id=f"{spec.code}-{kind}-{i}")


@pytest.mark.parametrize("spec,ex", list(_examples("invalid")))
def test_invalid_example_fires_and_fix_matches(spec, ex):
    diags = findings(spec.code, ex.code, ex.config)
    assert diags, f"{spec.code} did not fire on its invalid example:\n{ex.code}"
    if ex.lines:
        assert sorted({d.start.row for d in diags}) == sorted(ex.lines)
    if ex.regimes:
        assert sorted({r for d in diags for r in d.regimes}) == sorted(ex.regimes)
    for d in diags:
        assert d.url == spec.url and d.name == spec.name
    if ex.fixed is not None:
        assert any(d.fix for d in diags)
        if not ex.unsafe:
            assert all(d.fix.applicability == "safe" for d in diags if d.fix)
        fixed = apply_fixes(spec.code, ex.code, ex.config)
        assert fixed == ex.fixed
        cst.parse_module(fixed)
        compile(fixed, "fixed.py", "exec")
        assert not [d for d in findings(spec.code, fixed, ex.config) if d.fix], "fix is not idempotent"


@pytest.mark.parametrize("spec,ex", list(_examples("valid")))
def test_valid_example_stays_quiet(spec, ex):
    assert findings(spec.code, ex.code, ex.config) == []
