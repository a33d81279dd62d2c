"""The shape fixtures (``fixtures/shapes``) prove their claims at run time.

Each hazard must fail with a dtype error in exactly the regimes its docstring names and run cleanly in
the others; each clean file (twin or false-positive trap) must run cleanly in every regime.  The cases
are in ``tests/shape_specs.py``.  Fixtures that import transformers / diffusers / timm helpers are
skipped when the library is not installed (nothing is installed for them); einops is in the test extra.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import sys
import tokenize
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from shape_specs import CASES, EVERY, HELPERS, fixture_path, import_root  # noqa: E402

SHAPES = Path(__file__).resolve().parent.parent / "fixtures" / "shapes"
EXPECT = re.compile(r"#\s*expect:\s*DTL\d{3}")


def _annotated(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    return any(tok.type == tokenize.COMMENT and EXPECT.search(tok.string)
               for tok in tokenize.generate_tokens(io.StringIO(text).readline))


def _run(key: str, tree: Path = SHAPES):
    pytest.importorskip("torch")
    case = CASES[key]
    for name in case.needs:
        # Imported here, before the harness installs its flash-attn stand-in (transformers probes for flash_attn).
        try:
            importlib.import_module(name)
        except ImportError as exc:
            pytest.skip(f"{name} is not importable here ({exc})")
    from dtypelint.verify import verify_file

    return verify_file(tree / fixture_path(key), case.spec, regimes=EVERY, root=tree / import_root(key))


def _check_regimes(key: str, results) -> None:
    case = CASES[key]
    for regime, res in results.items():
        if regime in case.unrunnable:
            assert not res.ok and not res.dtype_error, (
                f"{key} [{regime}] now runs ({res.summary()}): drop it from `unrunnable`")
        elif regime in case.breaks:
            assert not res.ok and res.dtype_error, f"{key} [{regime}] does not reproduce: {res.summary()}"
        else:
            assert res.ok, f"{key} [{regime}] should run cleanly: {res.summary()}"


@pytest.mark.parametrize("key", sorted(k for k, c in CASES.items() if c.breaks))
def test_hazard_fails_with_a_dtype_error_exactly_in_its_regimes(key):
    _check_regimes(key, _run(key))


@pytest.mark.parametrize("key", sorted(k for k, c in CASES.items() if not c.breaks))
def test_clean_file_runs_in_every_regime(key):
    _check_regimes(key, _run(key))


GOLDEN = Path(__file__).resolve().parent / "golden" / "shapes"


@pytest.fixture(scope="module")
def fixed_shapes(tmp_path_factory):
    """``fixtures/shapes`` with every golden (what ``--fix --unsafe-fixes`` makes of it) in place."""
    import shutil

    tree = tmp_path_factory.mktemp("fixed") / "shapes"
    shutil.copytree(SHAPES, tree)
    for out in GOLDEN.rglob("*.out.py"):
        rel = out.relative_to(GOLDEN).as_posix()[:-len(".out.py")] + ".py"
        shutil.copyfile(out, tree / rel)
    return tree


@pytest.mark.parametrize("key", sorted(k for k, c in CASES.items() if c.breaks))
def test_fixed_hazard_runs_in_every_regime(key, fixed_shapes):
    """The fix dtypelint writes makes the module run where it broke (and breaks nothing elsewhere)."""
    results = _run(key, fixed_shapes)
    for regime, res in results.items():
        if regime in CASES[key].unrunnable:
            continue
        assert res.ok, f"{key} [{regime}] fails after the fix: {res.summary()}"


# -- the table and the files agree ------------------------------------------------------------------

FILES = sorted(p.relative_to(SHAPES).as_posix() for p in SHAPES.rglob("*.py") if p.name != "__init__.py")


def test_every_fixture_has_a_case_and_every_case_a_fixture():
    run = {fixture_path(k) for k in CASES}
    assert not run - set(FILES), f"cases without a file: {sorted(run - set(FILES))}"
    assert not set(FILES) - run - HELPERS, f"files without a case: {sorted(set(FILES) - run - HELPERS)}"
    assert not HELPERS - set(FILES), f"helpers that do not exist: {sorted(HELPERS - set(FILES))}"


@pytest.mark.parametrize("key", sorted(CASES))
def test_annotations_match_the_case(key):
    path = SHAPES / fixture_path(key)
    hazard = bool(CASES[key].breaks)
    assert _annotated(path) == hazard, f"{key}: {'hazard without' if hazard else 'clean file with'} `# expect:` lines"
    if hazard:
        twin = path.with_name(path.stem + "_ok.py")
        assert twin.exists(), f"{key}: no clean twin {twin.name}"


@pytest.mark.parametrize("key", sorted(CASES))
def test_fixture_is_model_shaped_and_its_docstring_names_the_regimes(key):
    path = SHAPES / fixture_path(key)
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) >= 30, f"{key}: shorter than 30 lines"
    tree = ast.parse(text)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert any(isinstance(f, ast.FunctionDef) and f.name == "forward" for c in classes for f in c.body), key
    doc = ast.get_docstring(tree) or ""
    for regime in CASES[key].breaks:
        assert f"`{regime}`" in doc or "every regime" in doc, f"{key}: the docstring does not name `{regime}`"
