"""The fix loop in memory: passes, overlaps, re-parse, convergence, imports, newlines."""

from __future__ import annotations

import re

import pytest

from dtypelint.diagnostics import Diagnostic, Edit, Fix, Position
from dtypelint.edits import apply_edit_groups
from dtypelint.fixer import FixOptions, ensure_import, fix_text, has_import, syntax_problem
from dtypelint.fixer.loop import normalize_newlines
from dtypelint.source import SourceFile


def diag(code, start, end, content, applicability="safe", extra=()):
    edits = (Edit(content, Position(*start), Position(*end)), *extra)
    return Diagnostic(code=code, name="x", message="m", severity="warning", filename="t.py",
                      start=Position(*start), end=Position(*end), fix=Fix(applicability, f"-> {content}", edits))


def regex_linter(rules):
    """rules: list of (code, pattern, replacement, applicability)."""
    def lint(src: SourceFile):
        out = []
        for code, pattern, repl, app in rules:
            for m in re.finditer(pattern, src.text):
                s, e = src.position(m.start()), src.position(m.end())
                out.append(diag(code, s, e, repl(m) if callable(repl) else repl, app))
        return out
    return lint


def run(text, rules, **kw):
    return fix_text(SourceFile(text=text), "t.py", regex_linter(rules), FixOptions(**kw))


def test_safe_only_by_default_unsafe_on_request():
    rules = [("A", r"-1e9", "-1e4", "safe"), ("B", r"\.float\(\)", ".to(x.dtype)", "unsafe")]
    rep, remaining = run("y = x.float() + -1e9\n", rules)
    assert rep.text == "y = x.float() + -1e4\n"
    assert [d.code for d in rep.fixed] == ["A"] and [d.code for d in remaining] == ["B"]
    rep, remaining = run("y = x.float() + -1e9\n", rules, unsafe=True)
    assert rep.text == "y = x.to(x.dtype) + -1e4\n" and remaining == []


def test_multiple_passes_until_stable_and_bounded():
    rep, remaining = run("s = 'aaaaaaa'\n", [("A", "aaa", "aa", "safe")])
    assert rep.text == "s = 'aa'\n" and rep.passes >= 2 and not remaining
    rep, remaining = run("PING\n", [("A", r"PING|PONG", lambda m: "PONG" if m.group() == "PING" else "PING", "safe")],
                         max_passes=4)
    assert rep.error and "did not converge" in rep.error and rep.text == "PING\n" and not rep.fixed


def test_overlapping_fixes_never_corrupt():
    rules = [("A", r"-1e9", "float('-inf')", "safe"), ("B", r"1e9", "1e4", "safe")]
    rep, _ = run("y = -1e9\n", rules)
    assert rep.text == "y = float('-inf')\n"
    assert syntax_problem(rep.text, "t.py") is None


def test_group_is_all_or_nothing():
    src = SourceFile(text="abcdef\n")
    g1 = (Edit("X", Position(1, 1), Position(1, 3)),)
    g2 = (Edit("Y", Position(1, 5), Position(1, 6)), Edit("Z", Position(1, 2), Position(1, 4)))  # Z overlaps g1
    text, applied = apply_edit_groups(src, [g1, g2])
    assert text == "Xcdef\n" and applied == [0]


def test_identical_edits_applied_once():
    src = SourceFile(text="x = 1\n")
    imp = Edit("import torch\n", Position(1, 1), Position(1, 1))
    g1 = (Edit("2", Position(1, 5), Position(1, 6)), imp)
    g2 = (imp,)
    text, applied = apply_edit_groups(src, [g1, g2])
    assert text == "import torch\nx = 2\n" and applied == [0, 1]


def test_fix_that_breaks_parse_leaves_text_untouched():
    rules = [("A", r"-1e9", "-1e4", "safe"), ("BAD", r"BREAK", "BREAK(", "safe")]
    rep, remaining = run("y = -1e9\nBREAK = 1\n", rules)
    assert rep.text == rep.original and rep.error and "BAD" in rep.error and not rep.fixed
    assert {d.code for d in remaining} == {"A", "BAD"}  # the original findings, positions of the original


def test_fix_that_compiles_badly_is_caught():
    # libcst accepts `return` at module level; CPython's compiler does not.
    rules = [("BAD", r"pass_here", "return 1", "safe")]
    rep, _ = run("pass_here\n", rules)
    assert rep.error and "SyntaxError" in rep.error and rep.text == "pass_here\n"


def test_noop_fix_terminates():
    rep, remaining = run("NOOP\n", [("N", "NOOP", "NOOP", "safe")])
    assert rep.text == "NOOP\n" and rep.error is None and remaining


def test_crlf_file_gets_crlf_edits():
    text = "import os\r\nx = -1e9\r\n"
    lint = regex_linter([("A", r"-1e9", "(\n-1e4\n)", "safe")])
    src = SourceFile.from_bytes(text.encode())
    rep, _ = fix_text(src, "t.py", lint, FixOptions())
    assert rep.text == "import os\r\nx = (\r\n-1e4\r\n)\r\n"
    assert normalize_newlines("a\nb\r\nc", "\r\n") == "a\r\nb\r\nc"


def test_unencodable_fix_leaves_file_untouched():
    src = SourceFile.from_bytes("# -*- coding: latin-1 -*-\nx = 'é' + -1e9\n".encode("latin-1"))
    rep, _ = fix_text(src, "t.py", regex_linter([("A", r"-1e9", "'→'", "safe")]), FixOptions())
    assert rep.error and "cannot be encoded" in rep.error and rep.text == rep.original


@pytest.mark.parametrize("text, expected", [
    ("import os\nx = 1\n", "import os\nimport torch\nx = 1\n"),
    ('"""Doc."""\nfrom __future__ import annotations\n\nclass A: ...\n',
     '"""Doc."""\nfrom __future__ import annotations\nimport torch\n\nclass A: ...\n'),
    ("#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\n@dec\ndef f(): ...\n",
     "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\nimport torch\n@dec\ndef f(): ...\n"),
    ('"""Doc."""', '"""Doc."""\nimport torch'),
    ("", "import torch\n"),
    ("import os\r\nx = 1\r\n", "import os\r\nimport torch\r\nx = 1\r\n"),
    ("import os, \\\n    sys\nx = 1\n", "import os, \\\n    sys\nimport torch\nx = 1\n"),
])
def test_ensure_import_inserts(text, expected):
    edit = ensure_import(text, "torch")
    assert edit is not None
    new, _ = apply_edit_groups(SourceFile(text=text), [(edit,)])
    assert new == expected
    assert ensure_import(new, "torch") is None and has_import(new, "torch")


@pytest.mark.parametrize("text", [
    "import torch\n", "import torch.nn as nn\nimport torch.nn\n", "import torch as torch\n",
    "try:\n    import torch\nexcept ImportError:\n    torch = None\n",
])
def test_ensure_import_present(text):
    assert ensure_import(text, "torch") is None


def test_ensure_import_alias_and_type_checking():
    assert ensure_import("import torch.nn as nn\n", "torch") is not None  # `torch` itself is not bound
    assert ensure_import("from torch.nn import functional as F\n", "torch.nn.functional", "F") is None
    e = ensure_import("import torch\n", "torch.nn.functional", "F")
    assert e is not None and e.content == "import torch.nn.functional as F\n"
    assert ensure_import("import torch.nn.functional as F\n", "torch.nn.functional", "F") is None
    assert ensure_import("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n", "torch") is not None


def test_fix_source_in_memory_with_the_real_analysis():
    from pathlib import Path

    from dtypelint.catalog import load_catalog
    from dtypelint.fixer import fix_source

    if "DTL101" not in load_catalog():
        pytest.skip("the analysis is not in this checkout")
    golden = Path(__file__).parent / "golden"
    text = (Path(__file__).parent.parent / "fixtures" / "seed1_dit_vanilla_attention.py").read_text()
    report, remaining = fix_source(text, "seed1_dit_vanilla_attention.py", unsafe=True)
    assert report.error is None and report.text == (golden / "seed1_dit_vanilla_attention.out.py").read_text()
    assert not remaining and [d.code for d in report.fixed] == ["DTL101"]


def test_project_is_fixed_again_when_a_fix_changes_cross_file_facts(monkeypatch, tmp_path):
    """Round 2 runs only when a written file's index summary changed (so other files see the new facts)."""
    from dtypelint import analysis
    from dtypelint.engine import CheckTask, FileOutcome
    from dtypelint.fixer import cli as fixcli
    from dtypelint.fixer.loop import FixReport

    monkeypatch.setattr(analysis, "summarize", lambda text, mod, fn: {f"{mod}.helper": "fp32" in text})
    tasks = [CheckTask(path=tmp_path / n, filename=n, settings=None, enabled=frozenset(), module_name=n[:-3])
             for n in ("a.py", "b.py")]
    calls = []

    def run(ts, options):
        calls.append([t.filename for t in ts])
        outs = []
        for t in ts:
            o = FileOutcome(t.filename)
            if t.filename == "a.py" and len(calls) == 1:  # round 1 rewrites a.py: helper no longer returns fp32
                o.fix = FixReport(original="fp32", text="fp16", fixed=[], written=True)
            outs.append(o)

        class R:
            outcomes = outs
        return R()

    code = fixcli.run_fix_mode(tasks=tasks, options=None, run=run, problems=[], stdin_task=None, unsafe=False,
                               diff=False, fix_only=True, show_fixes=False, exit_non_zero_on_fix=False,
                               exit_zero=False, quiet=True, emit=lambda r, s: None, make_report=None)
    assert code == 0 and calls == [["a.py", "b.py"], ["a.py", "b.py"]]
    assert fixcli.changed_facts(tasks[0], FixReport(original="x", text="x")) == set()
