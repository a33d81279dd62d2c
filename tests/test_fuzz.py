"""Fuzzing: analysis and fixes never fail on valid Python (a modest number of examples here; the
10,000-program run is ``benchmarks/fuzz_run.py``).  Crashes found are recorded, reduced, in
/work/notes/fuzz-crashes.md; the cases that still fail are listed in KNOWN_CRASHES (xfail)."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fuzzing import FIXTURES, compiles, model_programs, mutate, problems_of, project_problems, projects, with_probe

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # generated code calls literals, etc.

FUZZ = settings(max_examples=40, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

# Reproducers of crashes that are not fixed yet (see /work/notes/fuzz-crashes.md): name -> program.
KNOWN_CRASHES: dict[str, str] = {}


@FUZZ
@given(model_programs())
def test_model_shaped_programs(text):
    assert compiles(text)
    assert problems_of(text) == []


try:
    import hypothesmith

    PROGRAMS = hypothesmith.from_grammar()  # built once: building the grammar takes seconds
except ImportError:  # pragma: no cover - hypothesmith is in the test extras
    PROGRAMS = None


@pytest.mark.skipif(PROGRAMS is None, reason="hypothesmith is not installed")
@FUZZ
@given(PROGRAMS if PROGRAMS is not None else st.just(""))
def test_arbitrary_syntax(text):
    program = with_probe(text)
    assume(compiles(program))
    assert problems_of(program) == []


@settings(FUZZ, max_examples=15)
@given(projects())
def test_cross_file_projects(files):
    assert project_problems(files) == []


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.relative_to(p.parent.parent).as_posix())
def test_mutated_fixtures(fixture):
    rnd = random.Random(fixture.name)
    text = fixture.read_text(encoding="utf-8")
    tried = 0
    for _ in range(3):
        program = mutate(text, rnd, n=rnd.randint(1, 3))
        if program is None:
            continue
        tried += 1
        assert problems_of(program) == [], program
    assert tried or not text.strip()


@pytest.mark.parametrize("name", sorted(KNOWN_CRASHES) or [pytest.param("none", marks=pytest.mark.skip(
    reason="no open fuzz crash"))])
@pytest.mark.xfail(strict=False, reason="a crash found by fuzzing, recorded in /work/notes/fuzz-crashes.md")
def test_known_crash_reproducers(name):
    assert problems_of(KNOWN_CRASHES[name]) == []


def test_the_property_catches_an_analysis_crash(monkeypatch):
    """The fuzz tests can fail: an exception in the analysis is reported by problems_of."""
    from dtypelint import rules

    def boom(ctx):
        raise KeyError("synthetic")

    monkeypatch.setattr(rules, "check", boom)
    (problem,) = problems_of("import torch\n\ndef f(x):\n    return x.float() @ x\n")
    assert problem.startswith("DTL005") and "KeyError" in problem
