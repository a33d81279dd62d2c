"""Every fixture is flagged on exactly its `# expect:` lines (whole folder as one project)."""
from pathlib import Path

import pytest

from analysis_helpers import expectations, lint_files

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FILES = sorted(FIXTURES.rglob("*.py"))
RESULTS = {}


def results():
    if not RESULTS:
        RESULTS.update(lint_files(FILES))
    return RESULTS


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture(path):
    got = {(d.start.row, d.code) for d in results()[path]}
    assert got == expectations(path)


def test_every_seed_has_flagged_files_and_quiet_twins():
    flagged = [p for p in FILES if expectations(p)]
    quiet = [p for p in FILES if not expectations(p) and p.name != "__init__.py"]
    assert len(flagged) >= 8 and len(quiet) >= 5
    for p in flagged:
        if p.parent == FIXTURES:
            assert len(p.read_text().splitlines()) >= 40, p


def test_every_finding_has_regime_path_and_url():
    for path, diags in results().items():
        for d in diags:
            # dtype-flow hazards name the regimes they break in; training-step hygiene (DTL2xx) has none
            assert bool(d.regimes) == d.code.startswith("DTL1"), d
            assert d.path and d.url.endswith(f"{d.code}-{d.name}/")
            assert d.path[-1].row == d.start.row
