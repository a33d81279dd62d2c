"""A real library's model file: T5's fp32-kept ``wo`` poisons the residual stream when loaded in float16.

The harness is built from ``T5Config`` (tiny) and the ``loaded`` regime goes through transformers' own
``save_pretrained`` / ``from_pretrained(dtype=float16)``.  Skipped when transformers is not installed
(CI installs only the test extra).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_verify_session import verify  # noqa: E402

from dtypelint.diagnostics import Diagnostic, Edit, Fix, PathStep, Position  # noqa: E402

T5 = Path(transformers.__file__).parent / "models" / "t5" / "modeling_t5.py"
RESIDUAL = "hidden_states = hidden_states + self.dropout(forwarded_states)"


def residual_finding() -> Diagnostic:
    """DTL104 on T5LayerFF's residual add, as `check` reports it (found by text, not by line number)."""
    lines = T5.read_text().splitlines()
    cls = next(i for i, line in enumerate(lines) if line.startswith("class T5LayerFF("))
    row = next(i for i, line in enumerate(lines[cls:], cls + 1) if RESIDUAL in line)
    text = lines[row - 1]
    col = text.index("self.dropout(forwarded_states)") + 1
    end = col + len("self.dropout(forwarded_states)")
    fix = Fix("unsafe", "cast back", (Edit(".to(hidden_states.dtype)", Position(row, end), Position(row, end)),))
    return Diagnostic("DTL104", "fp32-module-output-in-residual", "kept fp32 output added to the residual", "warning",
                      str(T5), Position(row, col), Position(row, end), ("loaded",),
                      (PathStep(str(T5), row, col, "added to the residual"),), fix)


@pytest.mark.skipif(not T5.is_file(), reason="this transformers has no models/t5/modeling_t5.py")
def test_t5_keep_in_fp32_residual_is_reproduced_through_from_pretrained_and_fixed():
    if RESIDUAL not in T5.read_text():
        pytest.skip("this transformers release writes T5LayerFF differently")
    [r] = verify(T5, [residual_finding()])
    assert r.status == "reproduced", r.detail
    assert "turned float16 + float32 into float32" in r.detail
    assert "config=tiny T5Config" in r.harness and "inside T5" in r.harness  # the model whose keep list applies
    assert "from_pretrained failed" not in r.harness  # the library's own loader ran
    assert r.fixed is True and r.output_dtype == "torch.float16", r.fix_detail
    assert r.max_abs_err is not None and r.max_abs_err < 0.05
