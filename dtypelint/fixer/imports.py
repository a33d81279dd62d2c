"""Adding the import a fix needs, only when it is missing.

Rules call :func:`ensure_import` while they build a fix and append the returned
edit (if any) to the fix's edits::

    edits = [Edit("torch.finfo(scores.dtype).min", start, end)]
    imp = ensure_import(ctx.source.text, "torch")
    if imp is not None:
        edits.append(imp)

The edit inserts one line after the module's top-of-file import block (or after
the docstring and ``from __future__`` imports when there is none), in the file's
own line-ending style.  Two fixes that need the same import produce identical
edits; :func:`dtypelint.edits.apply_edit_groups` applies such duplicates once.
"""

from __future__ import annotations

import ast

from dtypelint.diagnostics import Edit, Position


def _newline_of(text: str) -> str:
    if "\r\n" in text:
        return "\r\n"
    if "\r" in text and "\n" not in text:
        return "\r"
    return "\n"


def _binds(stmt: ast.stmt, module: str, alias: str | None) -> bool:
    """Whether an import statement makes ``module`` usable under ``alias or module``."""
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if alias is None or alias == module:
                # ``import torch`` and ``import torch.nn`` both bind ``torch``.
                if (a.asname is None or a.asname == a.name == module) and \
                        (a.name == module or a.name.startswith(module + ".")):
                    return True
            elif a.asname == alias and a.name == module:
                return True
    elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
        parent, _, child = module.rpartition(".")
        for a in stmt.names:
            if parent and stmt.module == parent and a.name == child and (a.asname or a.name) == (alias or module):
                return True
    return False


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_level_statements(tree: ast.Module):
    """Top-level statements, looking into ``try`` and ``if`` blocks (not ``if TYPE_CHECKING``)."""
    def walk(body):
        for stmt in body:
            yield stmt
            if isinstance(stmt, ast.Try):
                for part in (stmt.body, stmt.orelse, stmt.finalbody, *[h.body for h in stmt.handlers]):
                    yield from walk(part)
            elif isinstance(stmt, ast.If) and not _is_type_checking(stmt.test):
                yield from walk(stmt.body)
                yield from walk(stmt.orelse)
    yield from walk(tree.body)


def has_import(source_text: str, module: str, alias: str | None = None) -> bool:
    """Whether ``module`` (as ``alias``) is imported at module level in ``source_text``."""
    try:
        tree = ast.parse(source_text)
    except (SyntaxError, ValueError):
        return False
    return any(_binds(s, module, alias) for s in _top_level_statements(tree))


def import_statement(module: str, alias: str | None = None) -> str:
    if alias is None:
        return f"import {module}"
    parent, _, child = module.rpartition(".")
    if parent and child == alias:
        return f"from {parent} import {child}"
    return f"import {module} as {alias}"


def ensure_import(source_text: str, module: str, alias: str | None = None) -> Edit | None:
    """An edit that adds ``import module`` (``import module as alias``) when it is missing.

    Returns None when the name is already bound by a module-level import (``import
    torch`` or ``import torch.nn`` both satisfy ``ensure_import(text, "torch")``), or when
    the text does not parse (the fixer never edits such a file anyway).
    """
    try:
        tree = ast.parse(source_text)
    except (SyntaxError, ValueError):
        return None
    if any(_binds(s, module, alias) for s in _top_level_statements(tree)):
        return None
    row = _insertion_row(tree)
    newline = _newline_of(source_text)
    line = import_statement(module, alias)
    lines = source_text.splitlines(keepends=True)
    if row > len(lines):
        # Insert at the very end: the file may lack a final newline.
        if lines and not lines[-1].endswith(("\n", "\r")):
            last = len(lines)
            return Edit(newline + line, Position(last, len(lines[-1]) + 1), Position(last, len(lines[-1]) + 1))
        pos = Position(len(lines) + 1, 1)
        return Edit(line + newline, pos, pos)
    pos = Position(row, 1)
    return Edit(line + newline, pos, pos)


def _insertion_row(tree: ast.Module) -> int:
    """The 1-based row before which the new import line goes."""
    after = 0  # last row of the statement the import goes after
    body = tree.body
    i = 0
    # Module docstring.
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        after = body[0].end_lineno or body[0].lineno
        i = 1
    # ``from __future__`` imports, then the leading run of imports.
    last_import = 0
    while i < len(body) and isinstance(body[i], (ast.Import, ast.ImportFrom)):
        last_import = body[i].end_lineno or body[i].lineno
        i += 1
    if last_import:
        return last_import + 1
    # No leading import block: use the last top-level import anywhere before the first def/class.
    for stmt in body[i:]:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            break
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and not (
                isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            last_import = stmt.end_lineno or stmt.lineno
    if last_import:
        return last_import + 1
    if after:
        return after + 1
    if body:  # before the first statement (after any shebang, cookie and header comments)
        first = body[0]
        decos = getattr(first, "decorator_list", None) or []
        return min([first.lineno, *(d.lineno for d in decos)])
    return 10**9  # empty module: at the end
