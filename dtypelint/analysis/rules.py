"""Turn the interpreter's raw findings into diagnostics (one rule code per hazard family).

The detection itself lives in the shared interpreter (sinks record ``RawFinding``s);
this module merges the findings of the regimes, renders the message and the
provenance path, and builds the fix edits.  Rule metadata (names, severities)
comes from the catalog in ``rules/``.
"""

from __future__ import annotations

import ast

from dtypelint.diagnostics import REGIMES, Diagnostic, Edit, Fix, PathStep, Position, rule_url

RULES = {
    "DTL101": ("mixed-dtype-matmul", "error"),
    "DTL102": ("mixed-dtype-attention", "error"),
    "DTL103": ("fp32-into-half-only-kernel", "error"),
    "DTL104": ("fp32-module-output-in-residual", "warning"),
    "DTL105": ("mixed-dtype-index-put", "error"),
    "DTL106": ("fp16-overflow-constant", "error"),
}

ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


def regimes_text(regimes: list[str]) -> str:
    if len(regimes) == 1:
        return f"{regimes[0]} regime"
    return " and ".join([", ".join(regimes[:-1]), regimes[-1]]) + " regimes"


def to_diagnostics(fa, raw, enabled) -> list[Diagnostic]:
    try:
        from dtypelint.catalog import get_rule
    except Exception:  # pragma: no cover
        get_rule = lambda code: None  # noqa: E731
    groups: dict[tuple, list] = {}
    for f in raw:
        if enabled is not None and f.code not in enabled:
            continue
        key = (f.code, f.node.lineno, f.node.col_offset, f.node.end_lineno, f.node.end_col_offset)
        groups.setdefault(key, []).append(f)
    out = []
    for key, fs in groups.items():
        regimes = [r for r in REGIMES if any(f.regime == r for f in fs)]
        first = next(f for r in REGIMES for f in fs if f.regime == r)
        code = first.code
        spec = get_rule(code)
        name, severity = RULES[code]
        if spec is not None:
            name, severity = spec.name, spec.severity
        node = first.node
        sr, sc = fa.start(node)
        er, ec = fa.end(node)
        message = first.message.replace("{regimes}", regimes_text(regimes))
        path = [PathStep(s.filename, s.row, s.col, s.message) for s in first.prov]
        path.append(PathStep(fa.filename, sr, sc, first.sink_step + f" (breaks in the {regimes_text(regimes)})"))
        fix = build_fix(fa, first.fix)
        out.append(Diagnostic(code=code, name=name, message=message, severity=severity, filename=fa.filename,
                              start=Position(sr, sc), end=Position(er, ec), regimes=tuple(regimes),
                              path=tuple(path), fix=fix, url=rule_url(code, name)))
    out.sort(key=lambda d: d.sort_key())
    return out


def build_fix(fa, spec) -> Fix | None:
    if not spec:
        return None
    applicability, title, items = spec
    edits: list[Edit] = []
    for node, kind, arg in items:
        if kind == "import":
            edits.append(import_edit(fa, arg))
            continue
        if node is None:
            return None
        sr, sc = fa.start(node)
        er, ec = fa.end(node)
        if kind == "cast":
            if isinstance(node, ATOMS) or (isinstance(node, ast.Constant)):
                edits.append(Edit(f".to({arg})", Position(er, ec), Position(er, ec)))
            else:
                edits.append(Edit("(", Position(sr, sc), Position(sr, sc)))
                edits.append(Edit(f").to({arg})", Position(er, ec), Position(er, ec)))
        elif kind == "replace":
            edits.append(Edit(arg, Position(sr, sc), Position(er, ec)))
    if not edits:
        return None
    edits.sort(key=lambda e: (e.start.row, e.start.column))
    return Fix(applicability, title, tuple(edits))


def import_edit(fa, line: str) -> Edit:
    """Insert ``line`` after the module docstring and ``from __future__`` imports."""
    row = 1
    body = fa.tree.body
    i = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        row = body[0].end_lineno + 1
        i = 1
    while i < len(body) and isinstance(body[i], ast.ImportFrom) and body[i].module == "__future__":
        row = body[i].end_lineno + 1
        i += 1
    return Edit(line, Position(row, 1), Position(row, 1))
