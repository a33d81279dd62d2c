"""Suppression comments."""

from __future__ import annotations

from conftest import FAKE_CODE
from dtypelint.engine import lint_source

HEAD = "import torch\n"


def codes(text: str) -> list[tuple[int, str]]:
    return [(d.start.row, d.code) for d in lint_source(HEAD + text, "m.py")]


def test_unsuppressed_fires(hazard_rule):
    assert codes("y = HAZARD\n") == [(2, FAKE_CODE)]


def test_noqa_with_code(hazard_rule):
    assert codes(f"y = HAZARD  # noqa: {FAKE_CODE}\n") == []
    assert codes(f"y = HAZARD  # noqa:{FAKE_CODE},DTL101\n") == []
    assert codes(f"y = HAZARD  # NOQA: DTL101 {FAKE_CODE}\n") == []


def test_noqa_with_other_code_does_not_suppress(hazard_rule):
    assert codes("y = HAZARD  # noqa: E501\n") == [(2, FAKE_CODE)]


def test_bare_noqa_suppresses_everything(hazard_rule):
    assert codes("y = HAZARD  # noqa\n") == []


def test_dtypelint_ignore(hazard_rule):
    assert codes(f"y = HAZARD  # dtypelint: ignore[{FAKE_CODE}]\n") == []
    assert codes("y = HAZARD  # dtypelint: ignore[DTL101]\n") == [(2, FAKE_CODE)]


def test_multiline_statement_first_line(hazard_rule):
    text = f"y = f(  # noqa: {FAKE_CODE}\n    1,\n    HAZARD,\n)\n"
    assert codes(text) == []
    text = "y = f(\n    1,\n    HAZARD,\n)  # noqa\n"  # last line of the statement is not where it is reported
    assert codes(text) == [(4, FAKE_CODE)]


def test_noqa_on_compound_header_covers_only_the_header(hazard_rule):
    text = f"def f(a=HAZARD):  # noqa: {FAKE_CODE}\n    return HAZARD\n"
    assert codes(text) == [(3, FAKE_CODE)]


def test_noqa_inside_a_string_does_not_count(hazard_rule):
    assert codes('y = HAZARD + "# noqa"\n') == [(2, FAKE_CODE)]


def test_skip_file(hazard_rule):
    assert codes("# dtypelint: skip-file\ny = HAZARD\n") == []
