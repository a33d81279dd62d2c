"""Fixed copies imported under the original module names, line maps, and target selection (no torch)."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from dtypelint.diagnostics import Edit, Fix, Position
from dtypelint.verify.overlay import FixError, LineMap, apply_fixes, modules_from, project_imports, purge, write_copies
from dtypelint.verify.targets import containers, statement_lines, targets_for


def fix(row, col, end_col, content):
    return Fix("safe", "t", (Edit(content, Position(row, col), Position(row, end_col)),))


def test_fixes_apply_together_or_not_at_all():
    text = "a = x @ v\nb = y @ w\n"
    assert apply_fixes(text, [fix(1, 5, 6, "x.half()"), fix(2, 5, 6, "y.half()")]) == "a = x.half() @ v\nb = y.half() @ w\n"
    with pytest.raises(FixError, match="overlap"):
        apply_fixes(text, [fix(1, 5, 6, "x.half()"), fix(1, 5, 8, "z")])
    with pytest.raises(FixError, match="not valid Python"):
        apply_fixes(text, [fix(1, 5, 6, "x.half(")])


def test_line_map_follows_added_lines():
    original = "import os\n\ndef f():\n    return 1\n"
    changed = "import os\nimport torch\n\ndef f():\n    return 1\n"
    m = LineMap(original, changed)
    assert [m(n) for n in (1, 3, 4, 5)] == [1, 2, 3, 4]


def test_a_fixed_copy_is_imported_under_the_original_name(tmp_path):
    pkg = tmp_path / "overlaypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text("VALUE = 'helper'\n")
    (pkg / "model.py").write_text(textwrap.dedent("""
        from .helpers import VALUE
        WHAT = 'original'
    """))
    original = pkg / "model.py"
    patched = write_copies({str(original): original.read_text().replace("'original'", "'fixed'")},
                           tmp_path / "copies", tmp_path)
    copy = patched[str(original)][0]
    assert copy.startswith(str(tmp_path / "copies")) and original.read_text().count("original") == 1
    try:
        with project_imports([tmp_path], patched):
            mod = importlib.import_module("overlaypkg.model")
            assert (mod.WHAT, mod.VALUE, mod.__name__, mod.__file__) == ("fixed", "helper", "overlaypkg.model", copy)
        assert modules_from([copy]) == ["overlaypkg.model"]
        purge(modules_from([copy]))
        with project_imports([tmp_path]):
            assert importlib.import_module("overlaypkg.model").WHAT == "original"
    finally:
        purge([n for n in sys.modules if n.startswith("overlaypkg")])


SOURCE = '''
import torch


class Cell(torch.nn.Module):
    def forward(self, x):
        y = self.helper(x)
        return self.proj(
            y,
        )

    def helper(self, x):
        return x

    def other(self, x):
        return x.float()


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = Cell()

    def forward(self, x):
        state = torch.zeros(2)
        return self.cell(state)


class Model(torch.nn.Module):
    def _init_weights(self, module):
        if isinstance(module, Cell):
            pass

    def __init__(self):
        super().__init__()
        self.head = Head()

    def forward(self, x):
        return self.head(x)


def free(x):
    return x.float()
'''


def test_targets_enclosing_method_and_callers():
    rows: dict[str, int] = {}
    for i, line in enumerate(SOURCE.splitlines(), 1):
        rows.setdefault(line.strip(), i)  # first occurrence
    forward, reached, alone = rows["return self.proj("], rows["return x"], rows["return x.float()"]
    assert statement_lines(SOURCE, forward + 1) == {forward, forward + 1, forward + 2}
    targets, _ = targets_for(SOURCE, reached)
    assert [t.describe() for t in targets] == ["Cell.forward", "Head.forward", "Model.forward"]  # helper runs in forward
    targets, _ = targets_for(SOURCE, alone)
    assert targets[0].describe() == "Cell.other"
    source_row = rows["state = torch.zeros(2)"]
    targets, _ = targets_for(SOURCE, forward, {source_row})
    assert targets[1].why.endswith(f"holds the dataflow path's line {source_row}")
    assert targets_for(SOURCE, rows["def free(x):"] + 1)[0][0].describe() == "free"
    assert targets_for(SOURCE, 2) == ([], "line 2 is not inside a class or a top-level function (module-level code)")
    assert containers(SOURCE, "Cell") == {"Head": 1, "Model": 2}  # `_init_weights` checks do not contain it
