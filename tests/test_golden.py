"""Golden before/after for every fix, and the fixed modules really run.

The "before" of each golden is ``fixtures/<path>.py`` itself; ``tests/golden/<path>.out.py``
is what ``dtypelint check --fix --unsafe-fixes`` must turn the whole tree into; a fixture
the fix leaves unchanged has no ``.out.py`` (it is its own golden).  That the unfixed modules fail in
the regime their findings name and the fixed ones run is checked by ``dtypelint verify`` itself
(``tests/test_verify_fixtures.py``).

Regenerate after a deliberate change of a fixture or a fix:
``DTYPELINT_UPDATE_GOLDENS=1 python -m pytest tests/test_golden.py`` (then review the diff:
``tests/test_verify_fixtures.py`` runs the new outputs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dtypelint.catalog import load_catalog
from dtypelint.fixer import syntax_problem

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
FIXTURES = ROOT / "fixtures"
UPDATE = bool(os.environ.get("DTYPELINT_UPDATE_GOLDENS"))
EXPECT = re.compile(r"#\s*expect:\s*(DTL\d{3}(?:\s*,\s*DTL\d{3})*)")


def goldens(kind: str) -> dict[str, Path]:
    """Relative path (``seed1_x.py``, ``crossfile/pkg/m.py``) -> the fixture ("in") or what fixing it must
    give ("out"): its ``.out.py`` golden, or the fixture itself when the fix changes nothing."""
    fixtures = {p.relative_to(FIXTURES).as_posix(): p for p in sorted(FIXTURES.rglob("*.py"))}
    if kind == "in":
        return fixtures
    return {rel: golden_path(rel) if golden_path(rel).exists() else src for rel, src in fixtures.items()}


def golden_path(rel: str) -> Path:
    return GOLDEN / (rel[:-3] + ".out.py")


def materialize(kind: str, dest: Path) -> Path:
    for rel, src in goldens(kind).items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return dest


# opt-in rules (catalog `default = false`) are enabled for the goldens too
OPT_IN = [f"--extend-select={','.join(c for c, s in load_catalog().items() if not s.default)}"] \
    if any(not s.default for s in load_catalog().values()) else []


def expected_codes() -> set[str]:
    codes = set()
    for src in goldens("in").values():
        for m in EXPECT.finditer(src.read_text(encoding="utf-8")):
            codes |= {c.strip() for c in m.group(1).split(",")}
    return codes


def test_every_input_has_an_output_and_outputs_compile():
    ins, outs = goldens("in"), goldens("out")
    assert ins and set(ins) == set(outs)
    orphans = [p for p in GOLDEN.rglob("*.out.py") if p.relative_to(GOLDEN).as_posix()[:-7] + ".py" not in ins]
    assert not orphans, f"goldens without a fixture: {orphans}"
    for rel, path in outs.items():
        assert syntax_problem(path.read_text(encoding="utf-8"), rel) is None, rel


def _dtl(args, cwd):
    """The real console script (this checkout first on the path), or ``python -m dtypelint``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    script = Path(sys.executable).parent / "dtypelint"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "dtypelint"]
    return subprocess.run([*cmd, "check", "--no-cache", *args], cwd=cwd, capture_output=True, env=env, timeout=300)


# Files the fixer must leave untouched, with DTL006, because the analysis proposes a fix that would not
# run (it has no ``.out.py``: the fixture is its golden).  When the analysis renders a correct fix, the test fails:
# write the new golden (DTYPELINT_UPDATE_GOLDENS=1, then check it at run time) and drop the entry.
EXPECTED_REFUSALS: dict[str, str] = {}


@pytest.fixture(scope="module")
def fixed_tree(tmp_path_factory):
    missing = expected_codes() - set(load_catalog())
    if missing:
        pytest.skip(f"the analysis for {sorted(missing)} is not in this checkout yet")
    tree = materialize("in", tmp_path_factory.mktemp("golden") / "tree")
    r = _dtl(["--fix", "--unsafe-fixes", "--output-format", "concise", *OPT_IN, "."], tree)
    assert r.returncode in (0, 1), r.stderr.decode()
    return tree, r.stdout.decode()


@pytest.mark.parametrize("rel", sorted(goldens("out")))
def test_fix_produces_the_golden(fixed_tree, rel):
    tree, output = fixed_tree
    out = goldens("out")[rel]
    got = (tree / rel).read_text(encoding="utf-8")
    if UPDATE:
        golden = golden_path(rel)
        if got == (FIXTURES / rel).read_text(encoding="utf-8"):
            golden.unlink(missing_ok=True)  # unchanged by --fix: the fixture is its own golden
        else:
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(got, encoding="utf-8")
        return
    assert got == out.read_text(encoding="utf-8"), f"--fix output of {rel} differs from its golden\n{output}"
    assert syntax_problem(got, rel) is None
    refused = f"{rel}:1:1: DTL006" in output
    assert refused == (rel in EXPECTED_REFUSALS), output


def test_second_fix_run_changes_nothing(fixed_tree):
    tree, _ = fixed_tree
    again = _dtl(["--diff", "--unsafe-fixes", *OPT_IN, "."], tree)
    assert again.stdout == b"", again.stdout.decode()
    assert again.returncode == (1 if EXPECTED_REFUSALS else 0)  # 1 only for the refusals, never for a diff


@pytest.mark.parametrize("newline, bom, latin1, final_newline", [
    ("\r\n", True, False, False), ("\r\n", False, True, True), ("\n", False, True, False), ("\n", True, False, True)])
def test_console_script_fixes_keep_the_file_format(tmp_path, newline, bom, latin1, final_newline):
    """The real analysis and the console script, on CRLF / BOM / latin-1 / no-final-newline copies."""
    missing = expected_codes() - set(load_catalog())
    if missing:
        pytest.skip(f"the analysis for {sorted(missing)} is not in this checkout yet")

    def variant(text: str) -> bytes:
        if latin1:
            text = "# -*- coding: latin-1 -*-\n" + text.replace('"""Diffusion', '"""Diffusion (é)', 1)
        if not final_newline:
            text = text.rstrip("\n")
        data = text.replace("\n", newline).encode("latin-1" if latin1 else "utf-8")
        return (b"\xef\xbb\xbf" + data) if bom else data

    name = "seed1_dit_vanilla_attention"
    f = tmp_path / f"{name}.py"
    f.write_bytes(variant((FIXTURES / f"{name}.py").read_text(encoding="utf-8")))
    os.chmod(f, 0o750)
    r = _dtl(["--fix", "--unsafe-fixes", f.name], tmp_path)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert f.read_bytes() == variant((GOLDEN / f"{name}.out.py").read_text(encoding="utf-8"))
    assert oct(f.stat().st_mode & 0o777) == oct(0o750)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f.name]
