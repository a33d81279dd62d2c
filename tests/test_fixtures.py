"""Every fixture is flagged on exactly the lines annotated ``# expect: CODE[, CODE]``.

The whole ``fixtures/`` folder is linted as one project (so cross-file facts work)
with the normal configuration discovery (a fixture folder may hold a dtypelint.toml).
Files with no annotation are correct twins and must stay quiet.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from dtypelint.catalog import load_catalog
from dtypelint.config import ConfigResolver
from dtypelint.discovery import discover
from dtypelint.engine import RunOptions, build_tasks, known_codes, run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DTL\d{3}(?:\s*,\s*DTL\d{3})*)")


def expectations(path: Path) -> set[tuple[int, str]]:
    out = set()
    text = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            m = EXPECT.search(tok.string)
            if m:
                out |= {(tok.start[0], c.strip()) for c in m.group("codes").split(",")}
    return out


# the fixtures are linted with the opt-in rules (catalog `default = false`) enabled too
OPT_IN = {"extend_select": tuple(code for code, on in known_codes().items() if not on)}


def lint_fixtures(options: RunOptions):
    import os

    old = os.getcwd()
    os.chdir(FIXTURES)
    try:
        resolver = ConfigResolver(known_codes=known_codes(), cwd=FIXTURES, cli=OPT_IN)
        found = discover([FIXTURES], resolver)
        tasks = build_tasks(found.files)
        return tasks, run(tasks, options)
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, set[tuple[int, str]]]:
    tasks, outcome = lint_fixtures(RunOptions(in_process=True))
    actual: dict[str, set[tuple[int, str]]] = {t.filename: set() for t in tasks}
    for d in outcome.diagnostics:
        actual.setdefault(d.filename, set()).add((d.start.row, d.code))
    return actual


FIXTURE_FILES = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.py"))


@pytest.mark.parametrize("rel", FIXTURE_FILES)
def test_fixture_flags_exactly_the_annotated_lines(rel, results):
    expected = expectations(FIXTURES / rel)
    actual = results.get(rel, set())
    missing = sorted(expected - actual)
    unexpected = sorted(actual - expected)
    assert not missing and not unexpected, f"{rel}: missing {missing}, unexpected {unexpected}"


def test_every_hazard_rule_has_fixtures_that_fire():
    annotated = {code for rel in FIXTURE_FILES for _, code in expectations(FIXTURES / rel)}
    hazard_codes = {c for c in load_catalog() if not c.startswith("DTL0")}
    assert hazard_codes, "the catalog has no hazard rules"
    assert hazard_codes <= annotated, f"rules without a firing fixture: {sorted(hazard_codes - annotated)}"


def test_findings_do_not_depend_on_how_the_run_is_split(monkeypatch):
    """Worker processes and one process (sharing parsed modules between the files it analyses) give the
    same diagnostics, field for field."""
    from dtypelint import engine

    def diagnostics(options: RunOptions) -> list[dict]:
        return [d.to_json() for d in lint_fixtures(options)[1].diagnostics]

    shared = diagnostics(RunOptions(in_process=True))
    monkeypatch.setattr(engine, "IN_PROCESS_BYTES", 0)  # the fixtures are small: force the workers
    workers = diagnostics(RunOptions(jobs=2))
    assert shared, "the fixtures produced no findings"
    assert workers == shared


# Files of a package linted alone, as pre-commit and editors pass them: the kernel, source, base class or
# keep-list that makes them hazardous is in another file of the package, found on disk.
ALONE_FILES = sorted(
    p.relative_to(FIXTURES).as_posix() for p in (FIXTURES / "shapes").rglob("*.py")
    if (p.parent / "__init__.py").exists() and (expectations(p) or p.stem.endswith("_ok"))
)


@pytest.mark.parametrize("rel", ALONE_FILES)
def test_package_file_linted_alone_flags_exactly_the_annotated_lines(rel):
    import os

    old = os.getcwd()
    os.chdir(FIXTURES)
    try:
        resolver = ConfigResolver(known_codes=known_codes(), cwd=FIXTURES, cli=OPT_IN)
        tasks = build_tasks(discover([FIXTURES / rel], resolver).files)
        outcome = run(tasks, RunOptions(in_process=True))
    finally:
        os.chdir(old)
    actual = {(d.start.row, d.code) for d in outcome.diagnostics if Path(d.filename).as_posix().endswith(rel)}
    assert actual == expectations(FIXTURES / rel), f"{rel} linted alone: {sorted(actual)}"
