"""Findings to diagnostics: regimes merged, the path and its condition spelled, fixes as text edits."""

from __future__ import annotations

import ast

from dtypelint.diagnostics import REGIMES, Diagnostic, Edit, Fix, PathStep, Position, rule_url

ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


def regimes_text(regimes: list[str]) -> str:
    if len(regimes) == 1:
        return f"{regimes[0]} regime"
    return " and ".join([", ".join(regimes[:-1]), regimes[-1]]) + " regimes"


def condition_text(clauses: tuple[str, ...]) -> str:
    return " and ".join(dict.fromkeys(clauses))


def to_diagnostics(fa, judged) -> list[Diagnostic]:
    from dtypelint.catalog import get_rule
    groups: dict[tuple, list] = {}
    for j in judged:
        n = j.finding.event.node
        key = (j.finding.code, n.lineno, n.col_offset, n.end_lineno, n.end_col_offset)
        groups.setdefault(key, []).append(j)
    out = []
    for js in groups.values():
        regimes = [r for r in REGIMES if any(j.finding.event.regime == r for j in js)]
        # regime-less events (training-step API usage) come from one syntactic pass
        first = next((j for r in REGIMES for j in js if j.finding.event.regime == r), js[0])
        f = first.finding
        conds = [j.condition for j in js]
        cond = condition_text(first.condition) if all(conds) else ""
        spec = get_rule(f.code)
        name, severity = (spec.name, spec.severity) if spec is not None else (f.code, "error")  # every rule has one
        node = f.event.node
        sr, sc = fa.start(node)
        er, ec = fa.end(node)
        where = f" when {cond}" if cond else ""
        path = [PathStep(s.filename, s.row, s.col, s.message) for s in f.prov]
        if regimes:
            message = f.message.replace("{regimes}", regimes_text(regimes) + where)
            path.append(PathStep(fa.filename, sr, sc, f.sink_step + f" (breaks in the {regimes_text(regimes)}{where})"))
        else:
            message = f.message
            path.append(PathStep(fa.filename, sr, sc, f.sink_step))
        out.append(Diagnostic(code=f.code, name=name, message=message, severity=severity, filename=fa.filename,
                              start=Position(sr, sc), end=Position(er, ec), regimes=tuple(regimes),
                              path=tuple(path), fix=build_fix(fa, f.fix), url=rule_url(f.code, name),
                              condition=cond))
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
            if isinstance(node, ATOMS) or isinstance(node, ast.Constant):
                edits.append(Edit(f".to({arg})", Position(er, ec), Position(er, ec)))
            else:
                edits.append(Edit("(", Position(sr, sc), Position(sr, sc)))
                edits.append(Edit(f").to({arg})", Position(er, ec), Position(er, ec)))
        elif kind == "dtype":
            # add `dtype=` as the last argument of an allocation: `torch.zeros(a, b)` -> `torch.zeros(a, b, dtype=x)`
            text = fa.segment(node) or ""
            if not text.endswith(")") or ec < 2:
                return None
            # the last code character before `)`, ignoring comments on the call's own lines
            code = "\n".join(line.split("#", 1)[0] for line in text[:-1].splitlines()).rstrip()
            sep = "" if code.endswith("(") else (" " if code.endswith(",") else ", ")
            edits.append(Edit(f"{sep}dtype={arg}", Position(er, ec - 1), Position(er, ec - 1)))
        elif kind == "replace":
            edits.append(Edit(arg, Position(sr, sc), Position(er, ec)))
        elif kind == "before":
            edits.append(Edit(arg, Position(sr, sc), Position(sr, sc)))
        elif kind == "after":
            edits.append(Edit(arg, Position(er, ec), Position(er, ec)))
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
