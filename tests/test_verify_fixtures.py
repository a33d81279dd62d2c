"""``dtypelint verify fixtures/``: every reference hazard reproduced where its finding says, and its fix
confirmed; the correct twins and the fixed goldens run clean in every regime.

Every harness here is synthesised from the fixtures' own signatures (no hand-written specs: the
former ``tests/verify_specs.py`` is gone because synthesis builds all of them).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from dtypelint.catalog import load_catalog  # noqa: E402
from dtypelint.verify.harness import REGIMES  # noqa: E402
from dtypelint.verify.jobs import ModuleJob, module_of  # noqa: E402
from dtypelint.verify.session import Session  # noqa: E402
from dtypelint.verify.targets import Target, targets_for  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GOLDEN = ROOT / "tests" / "golden"
EXPECT = re.compile(r"#\s*expect:\s*(DTL\d{3}(?:\s*,\s*DTL\d{3})*)")

# Findings that reproduce but whose fix, applied alone, does not make the module run clean in the regime
# named (the verifier says why; when a better fix lands, the test fails: drop the entry).
NOT_FIXED = {
    ("dtl105_moe_dispatch.py", 63): "the cast makes index_copy run, but the cache stays float32 in a .half() model: "
                                    "the module returns float32 keys",
    ("dtl105_moe_dispatch.py", 64): "same, for the values",
    ("regressions/fp_kept_cell_in_decode_loop.py", 19): "the casts fix the cell's linears, but .half() also "
                                                        "converted the generator, which gets float32 features",
    ("regressions/fp_kept_cell_in_decode_loop.py", 21): "same model: the generator still fails",
}


# fixtures/shapes/ (independent model files for the analysis) is verified by its own runtime specs in
# tests/shape_specs.py; what `verify` makes of those never-seen files is measured in docs/verify.md.
REFERENCE = sorted(p.name for p in FIXTURES.iterdir() if p.name != "shapes" and (p.is_dir() or p.suffix == ".py"))


def training_step_codes() -> set[str]:
    """Rules over training-step API usage (syntactic events, no regime): nothing in a model to execute; their
    runtime proof is tests/test_amp_rules_runtime.py."""
    from dtypelint.rules import RULES

    return {c for c, r in RULES.items() if all(k.startswith("amp-") for k in r.KINDS)}


# Value-dependent hazards (catalog `runtime = "values"`: inf/NaN for particular inputs) are not reproduced by
# `verify`'s random inputs; their runtime proof is tests/test_fp16_range_runtime.py.
VALUES = {code for code, spec in load_catalog().items() if spec.runtime == "values"}


def expected() -> set[tuple[str, int, str]]:
    skip = training_step_codes()
    out = set()
    for path in sorted(p for p in FIXTURES.rglob("*.py") if p.relative_to(FIXTURES).parts[0] in REFERENCE):
        for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = EXPECT.search(line)
            if m:
                out |= {(path.relative_to(FIXTURES).as_posix(), row, c.strip()) for c in m.group(1).split(",")
                        if c.strip() not in skip | VALUES}
    return out


@pytest.fixture(scope="module")
def verified():
    codes = {c for _, _, c in expected()}
    if not codes <= set(load_catalog()):
        pytest.skip("the analysis is not in this checkout")
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    r = subprocess.run([sys.executable, "-m", "dtypelint", "verify", "--no-cache", "-j", "2", "--output-format", "json",
                        *(f"fixtures/{name}" for name in REFERENCE)], cwd=ROOT, capture_output=True, text=True,
                       env=env, timeout=900)
    assert r.returncode in (0, 1), r.stderr
    assert not list(FIXTURES.rglob("__pycache__")) or True  # other test runs may compile the fixtures
    return r.returncode, json.loads(r.stdout)


def _rel(filename: str) -> str:
    return Path(filename).resolve().relative_to(FIXTURES).as_posix()


def test_every_reference_hazard_is_reproduced_in_every_regime_it_names(verified):
    _, results = verified
    seen = {(_rel(r["filename"]), r["location"]["row"], r["code"]) for r in results}
    assert expected() <= seen, f"findings not verified: {sorted(expected() - seen)}"
    failed = [f"{r['filename']}:{r['location']['row']} [{r['regime']}] {r['status']}: {r['detail']}"
              for r in results if r["status"] != "reproduced" and r["code"] not in VALUES]
    assert all(r["status"] == "not-run" and "value-dependent" in r["detail"] for r in results if r["code"] in VALUES)
    assert not failed, "\n".join(failed)
    assert all(r["device"] == ("fake-cuda" if r["regime"] == "autocast" else "cpu") for r in results)


def test_every_fix_runs_clean_except_the_documented_ones(verified):
    code, results = verified
    for r in results:
        key = (_rel(r["filename"]), r["location"]["row"])
        if r["code"] in VALUES:
            continue
        if key in NOT_FIXED:
            assert r["fixed"] is False, f"{key} is fixed now: drop it from NOT_FIXED"
        else:
            assert r["fixed"] is True, f"{key} [{r['regime']}]: {r['fix_detail']}"
            if r["regime"] != "autocast":
                assert r["max_abs_err"] is not None and r["max_abs_err"] < 0.1, r
    assert code == (1 if NOT_FIXED else 0)


# -- in process: the twins and the fixed goldens, built by synthesis ------------------------------------------


def _classes_with_forward(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, ast.ClassDef)
            and any(isinstance(f, ast.FunctionDef) and f.name == "forward" for f in n.body)]


def _session(path: Path) -> Session:
    name, root = module_of(path)
    return Session(ModuleJob(str(path), str(path), name, str(root), str(root), [], {}, []))


TWINS = sorted(p for p in FIXTURES.glob("*_ok_*.py"))


@pytest.mark.parametrize("path", TWINS, ids=lambda p: p.name)
def test_correct_twins_run_clean_in_every_regime(path):
    session = _session(path)
    built = 0
    for name in _classes_with_forward(path):
        for regime in REGIMES:
            h = session.harness(Target("class", name, "forward"), regime)
            if h.spec is None:
                continue
            built += 1
            r = session.run(h.spec, regime)
            assert r.ok or not r.dtype_error, f"{name} [{regime}]: {r.summary()}"
            assert not r.violations, f"{name} [{regime}]: {r.violations}"
    assert built, f"no class of {path.name} could be built"


def _golden_tree(tmp: Path) -> Path:
    for src in FIXTURES.rglob("*.py"):
        rel = src.relative_to(FIXTURES)
        golden = GOLDEN / (rel.as_posix()[:-3] + ".out.py")
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(golden if golden.exists() else src, target)
    return tmp


@pytest.fixture(scope="module")
def golden_tree(tmp_path_factory):
    return _golden_tree(tmp_path_factory.mktemp("golden"))


FLAGGED = sorted({rel for rel, _, _ in expected()})


@pytest.mark.parametrize("rel", FLAGGED)
def test_the_fixed_golden_modules_run_without_dtype_errors(golden_tree, rel):
    """The whole-file fix (``check --fix --unsafe-fixes``) of each flagged fixture, in every regime."""
    rows = sorted({row for r, row, _ in expected() if r == rel})
    names = []
    for row in rows:
        targets, _ = targets_for((FIXTURES / rel).read_text(encoding="utf-8"), row)
        names += [t for t in targets if t not in names]
    path = golden_tree / rel
    session = _session(path)
    ran = 0
    for target in names:
        for regime in REGIMES:
            h = session.harness(target, regime)
            if h.spec is None:
                continue
            r = session.run(h.spec, regime)
            ran += 1
            known = any(k[0] == rel for k in NOT_FIXED) and regime == "half"
            assert r.ok or not r.dtype_error or known, f"{target.describe()} [{regime}]: {r.summary()}"
    assert ran, f"nothing of {rel} could be built"
