"""Notebooks: code cells linted with magics skipped, findings mapped to cells, fixes written back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from dtypelint.edits import apply_edit_groups
from dtypelint.engine import lint_source
from dtypelint.source.notebook import (
    NotebookError, NotebookSource, apply_cell_sources, load_notebook, notebook_apply_fixed_source,
)
from dtypelint.source import SourceFile


def make_notebook(cells, indent=1, trailing="\n", string_sources=False) -> str:
    nb = {
        "cells": [],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python", "version": "3.11.7"}, "zeta": 1, "alpha": "é"},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    for i, (kind, src) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"c{i}", "metadata": {"tags": ["t"]},
                "source": src if string_sources else src.splitlines(keepends=True)}
        if kind == "code":
            cell["execution_count"] = i
            cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["hello ☃\n"]}]
        nb["cells"].append(cell)
    return json.dumps(nb, indent=indent, ensure_ascii=False) + trailing


CELLS = [
    ("markdown", "# Title\nSome `torch.mm(` text that is not code\n"),
    ("code", "%matplotlib inline\n!pip install torch\nimport torch\nfiles = !ls\n"),
    ("code", "%%bash\necho torch.mm(a, b)\n"),
    ("code", "def f(x, w):\n    a = x.float()\n    %time y = 1\n    return torch.mm(a, w)\ntorch.mm?\n"),
    ("code", "out = torch.mm(x, w)  # noqa: DTL999\n"),
]


@pytest.fixture
def nb_project(project, fake_rule):
    (project / "nb.ipynb").write_text(make_notebook(CELLS), encoding="utf-8")
    return project


def test_python_view_keeps_rows_and_parses():
    src = NotebookSource.from_bytes(make_notebook(CELLS).encode())
    compile(src.text, "nb", "exec")  # placeholders keep it valid Python
    assert "!pip" not in src.text and "%time" not in src.text and "echo" not in src.text
    assert src.locate(src.virtual_row(3, 4)) == (3, 4)
    assert [c.index for c in src.cells] == [1, 2, 3, 4]


def test_findings_are_mapped_to_cells(nb_project):
    r = run_cli("--output-format", "json", "nb.ipynb")
    assert r.exit_code == 1, r.output
    diags = json.loads(r.output)
    assert len(diags) == 1  # the markdown cell, the %%bash cell and the noqa'd line are quiet
    d = diags[0]
    assert d["cell"] == 3 and d["location"] == {"row": 4, "column": 12}
    assert d["path"][0]["row"] == 2 and "[cell 4]" in d["path"][0]["message"]
    full = run_cli("nb.ipynb").output
    assert "nb.ipynb:cell 4:4:12" in full


def test_cell_findings_in_other_formats(nb_project):
    import jsonschema

    from test_reporters import GITLAB_SCHEMA, sarif_schema

    sarif = json.loads(run_cli("--output-format", "sarif", "nb.ipynb").output)
    jsonschema.validate(sarif, sarif_schema())
    assert sarif["runs"][0]["results"][0]["properties"]["cell"] == 3
    gitlab = json.loads(run_cli("--output-format", "gitlab", "nb.ipynb").output)
    jsonschema.validate(gitlab, GITLAB_SCHEMA)
    lsp = json.loads(run_cli("--output-format", "lsp", "nb.ipynb").output)
    assert lsp[0]["diagnostics"][0]["data"]["cell"] == 3
    assert lsp[0]["diagnostics"][0]["range"]["start"] == {"line": 3, "character": 11}
    assert "cell 4" in run_cli("--output-format", "github", "nb.ipynb").output


def test_baseline_on_notebooks(nb_project):
    assert run_cli("--write-baseline", "b.json", "nb.ipynb").exit_code == 0
    cells = [CELLS[0], ("code", "import torch\n")] + CELLS[1:]  # a new cell above shifts every index
    (nb_project / "nb.ipynb").write_text(make_notebook(cells), encoding="utf-8")
    assert run_cli("--baseline", "b.json", "nb.ipynb").exit_code == 0


@pytest.mark.parametrize("content,needle", [
    ("{ not json", "invalid notebook JSON"),
    ('{"metadata": {}}', "no 'cells' list"),
    ('{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1"),
])
def test_malformed_notebook_is_a_problem_and_the_run_goes_on(nb_project, content, needle):
    (nb_project / "bad.ipynb").write_text(content)
    r = run_cli("--output-format", "json", ".")
    diags = json.loads(r.output)
    bad = [d for d in diags if d["filename"] == "bad.ipynb"]
    assert len(bad) == 1 and bad[0]["code"] == "DTL002" and needle in bad[0]["message"]
    assert any(d["filename"] == "nb.ipynb" for d in diags)
    assert r.exit_code == 1


def test_syntax_error_in_a_cell(project, fake_rule):
    (project / "s.ipynb").write_text(make_notebook([("code", "import torch\n"), ("code", "x = 1\ndef f(:\n")]))
    d = json.loads(run_cli("--output-format", "json", "s.ipynb").output)
    assert [(x["code"], x["cell"], x["location"]["row"]) for x in d] == [("DTL001", 1, 2)]


def _fix_all(original: bytes, fake_rule) -> bytes:
    src = NotebookSource.from_bytes(original)
    diags = [src.to_virtual(src.to_cells(d)) for d in lint_source(src.text, "nb.ipynb")]
    fixed, applied = apply_edit_groups(SourceFile(text=src.text), [d.fix.edits for d in diags if d.fix])
    assert applied
    return notebook_apply_fixed_source(original, fixed)


@pytest.mark.parametrize("indent,trailing,string_sources", [(1, "\n", False), (2, "", False), (4, "\n", True)])
def test_write_back_preserves_everything_else(fake_rule, indent, trailing, string_sources):
    original = make_notebook(CELLS, indent=indent, trailing=trailing, string_sources=string_sources).encode()
    result = _fix_all(original, fake_rule)
    before, after = json.loads(original), json.loads(result)
    assert after["cells"][3]["source"] == (
        "def f(x, w):\n    a = x.float()\n    %time y = 1\n    return torch.matmul(a, w)\ntorch.mm?\n"
        if string_sources else
        ["def f(x, w):\n", "    a = x.float()\n", "    %time y = 1\n", "    return torch.matmul(a, w)\n", "torch.mm?\n"])
    after["cells"][3]["source"] = before["cells"][3]["source"]
    assert after == before  # magics, outputs, metadata, other cells: unchanged
    # byte for byte apart from the one changed line: same indentation, key order, escapes, trailing newline
    expected = original.decode().replace("return torch.mm(a, w)", "return torch.matmul(a, w)").encode()
    assert result == expected


def test_write_back_of_unchanged_source_is_identity(fake_rule):
    original = make_notebook(CELLS).encode()
    src = NotebookSource.from_bytes(original)
    assert notebook_apply_fixed_source(original, src.text) == original


def test_write_back_keeps_ascii_escapes_and_multiline_changes():
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["# caf\u00e9\n", "x = 1"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    original = json.dumps(nb, indent=1).encode()  # ensure_ascii=True: "caf\u00e9"
    out = apply_cell_sources(original, {0: "# caf\u00e9\nx = 1\ny = 2"})
    assert b"\\u00e9" in out
    assert json.loads(out)["cells"][0]["source"] == ["# caf\u00e9\n", "x = 1\n", "y = 2"]
    assert out.decode().count("\n") == original.decode().count("\n") + 1


def test_write_back_rejects_lost_cells():
    original = make_notebook(CELLS).encode()
    with pytest.raises(NotebookError):
        notebook_apply_fixed_source(original, "import torch\n")


def test_load_notebook_spans_match_json():
    text = make_notebook(CELLS)
    _, nb = load_notebook(text)
    for cell in nb["cells"]:
        start, end = cell.spans["source"]
        assert json.loads(text[start:end]) == cell["source"]


# -- `check --fix` on notebooks, with the real rules ----------------------------------------

SEED = (Path(__file__).resolve().parent.parent / "fixtures" / "seed1_dit_vanilla_attention.py")


def _seed_notebook(tmp_path) -> Path:
    cells = [("markdown", "# A DiT block\n"), ("code", "%matplotlib inline\n!nvidia-smi\n"),
             ("code", SEED.read_text())]
    path = tmp_path / "dit.ipynb"
    path.write_text(make_notebook(cells), encoding="utf-8")
    return path


def test_fix_writes_the_cells_back(project):
    path = _seed_notebook(project)
    original = path.read_bytes()
    r = run_cli("--output-format", "concise", "dit.ipynb")
    assert r.exit_code == 1 and "dit.ipynb:cell 3:29:13: DTL101" in r.output, r.output
    diff = run_cli("--diff", "dit.ipynb")
    assert "+        x = attn.to(v.dtype) @ v" in diff.output and path.read_bytes() == original
    fixed = run_cli("--fix", "--output-format", "json", "dit.ipynb")
    assert fixed.exit_code == 0, fixed.output
    after = path.read_bytes()
    assert after == original.replace(b'"        x = attn @ v', b'"        x = attn.to(v.dtype) @ v')
    json.loads(after)
    assert run_cli("dit.ipynb").exit_code == 0  # fixed, and the second run has nothing left


def test_fixer_never_writes_cell_rows_into_the_json(project, fake_rule):
    (project / "nb.ipynb").write_text(make_notebook(CELLS), encoding="utf-8")
    r = run_cli("--fix", "nb.ipynb")
    assert r.exit_code == 0, r.output
    nb = json.loads((project / "nb.ipynb").read_text())
    assert "".join(nb["cells"][3]["source"]).count("torch.matmul(a, w)") == 1
    assert nb["cells"][1]["source"] == make_notebook_cells_source(1)


def make_notebook_cells_source(i: int):
    return json.loads(make_notebook(CELLS))["cells"][i]["source"]
