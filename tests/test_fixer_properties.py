"""Properties of --fix over every fixture, with hypothesis-chosen file formats.

For a fixture text T and a format variant (LF/CRLF, UTF-8 BOM, a latin-1 coding
cookie, with or without a final newline), fixing the variant's bytes gives exactly
the variant of fix(T): the fixer changes nothing but the fix edits.  The result
parses and compiles, and a second run offers no fix.

The fixes come from the real analysis (when it is in this checkout) plus the fake
rules of ``tests/fakerules.py`` (so the mechanics are exercised on real model code
whatever the analysis flags).
"""

from __future__ import annotations

import codecs
import io
import sys
import tokenize
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtypelint import analysis, rules
from dtypelint.config import Settings
from dtypelint.engine import CheckTask, check_source, known_codes
from dtypelint.fixer import FixOptions, fix_text, syntax_problem
from dtypelint.fixer.loop import applicable
from dtypelint.index import ProjectIndex
from dtypelint.source import SourceFile

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fakerules  # noqa: E402

ROOT = HERE.parent
FILES = sorted(ROOT.joinpath("fixtures").rglob("*.py"))
COOKIE = "# -*- coding: latin-1 -*-\n"


@pytest.fixture(scope="module")
def lint():
    """A linter with the real rules and the fake ones (DTL901 safe, DTL902 unsafe, DTL904 multi-pass)."""
    real_check = rules.check
    real_filter = analysis.might_contain_hazard
    fakerules.install(("DTL901", "DTL902", "DTL904"))
    fake_check = rules.check

    def both(ctx):
        try:
            real = real_check(ctx)
        except Exception:
            real = []
        return [*real, *fake_check(ctx)]

    rules.check = both
    codes = frozenset(known_codes())
    task = CheckTask(path=None, filename="m.py", settings=Settings(root=ROOT), enabled=codes, module_name="m")

    def run(src: SourceFile):
        outcome, _ = check_source(src, task, ProjectIndex())
        return outcome.diagnostics

    try:
        yield run
    finally:
        rules.check = real_check
        analysis.might_contain_hazard = real_filter
        fakerules.uninstall()


def comments(text: str) -> Counter:
    out = Counter()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.string] += 1
    return out


def variant_bytes(text: str, newline: str, bom: bool, latin1: bool, final_newline: bool) -> bytes:
    if latin1:
        text = COOKIE + text
    if not final_newline:
        text = text.rstrip("\n")
    text = text.replace("\n", newline)
    data = text.encode("latin-1" if latin1 else "utf-8")
    return codecs.BOM_UTF8 + data if bom else data


def fix_bytes(data: bytes, lint, unsafe: bool) -> tuple[bytes, list, str | None]:
    """The fixed bytes (the input itself when the fixer refused: DTL006), what remains, the refusal."""
    src = SourceFile.from_bytes(data)
    report, remaining = fix_text(src, "m.py", lint, FixOptions(unsafe=unsafe, write=False))
    if report.error is not None:
        assert report.text == report.original and not report.fixed
        return data, remaining, report.error
    return (report.data if report.changed else data), remaining, None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(FILES), newline=st.sampled_from(["\n", "\r\n"]), bom=st.booleans(),
       latin1=st.booleans(), final_newline=st.booleans(), unsafe=st.booleans())
def test_fix_changes_only_the_fixes_in_any_format(lint, path, newline, bom, latin1, final_newline, unsafe):
    text = path.read_text(encoding="utf-8")
    if latin1:
        bom = False  # a BOM declares UTF-8: Python rejects it together with a latin-1 cookie
        try:
            text.encode("latin-1")
        except UnicodeEncodeError:
            latin1 = False
    canonical = (COOKIE if latin1 else "") + text
    fixed_canonical, _, refused = fix_bytes(canonical.encode("latin-1" if latin1 else "utf-8"), lint, unsafe)
    fixed_text = fixed_canonical.decode("latin-1" if latin1 else "utf-8")
    if latin1:
        fixed_text = fixed_text[len(COOKIE):]
    data = variant_bytes(text, newline, bom, latin1, final_newline)
    got, remaining, refused_variant = fix_bytes(data, lint, unsafe)
    assert (refused is None) == (refused_variant is None)  # the format never decides whether a fix is safe
    assert got == variant_bytes(fixed_text, newline, bom, latin1, final_newline)
    decoded = SourceFile.from_bytes(got)
    assert syntax_problem(decoded.text, "m.py") is None
    assert not comments(canonical) - comments(SourceFile.from_bytes(fixed_canonical).text)  # comments kept
    if refused_variant is None:
        assert not applicable(remaining, unsafe)  # idempotent: nothing left to fix
    again, _, _ = fix_bytes(got, lint, unsafe)
    assert again == got


def test_there_are_fixtures_and_fixes(lint):
    assert FILES
    fixed = 0
    for path in FILES:
        report, _ = fix_text(SourceFile.from_bytes(path.read_bytes()), "m.py", lint, FixOptions(unsafe=True, write=False))
        fixed += len(report.fixed)
    assert fixed > 0
