"""Which class or function to build and call for a finding (read from the source, no torch).

The first candidate is the ``nn.Module`` subclass that encloses the flagged line (or the
top-level function).  When the finding's dataflow path starts in a caller (a float32 state
created by the module that owns the flagged one), running the flagged module alone with
compute-dtype inputs cannot show it, so the classes that use it in the same file follow,
those holding a path step first.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

MAX_CANDIDATES = 4


@dataclass(frozen=True)
class Target:
    kind: str  # "class" | "function"
    name: str  # top-level name in the module
    method: str = "forward"  # what to call on an instance of a class
    why: str = ""

    def describe(self) -> str:
        return f"{self.name}.{self.method}" if self.kind == "class" else self.name


def _top_level(tree: ast.Module) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    """Classes and functions defined at module level (also inside module-level if/try blocks)."""
    out: list = []

    def visit(body):
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append(node)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                for h in node.handlers:
                    visit(h.body)

    visit(tree.body)
    return out


def _contains(node: ast.AST, row: int) -> bool:
    return node.lineno <= row <= (node.end_lineno or node.lineno)


def statement_lines(text: str, row: int, end_row: int | None = None) -> set[int]:
    """The lines of the innermost simple statement(s) holding ``row`` .. ``end_row``: a failure
    reported on any line of a multi-line call still belongs to the flagged statement."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return set(range(row, (end_row or row) + 1))
    lines: set[int] = set()
    for r in {row, end_row or row}:
        best = None
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt) and _contains(node, r):
                compound = hasattr(node, "body") and isinstance(getattr(node, "body"), list)
                if compound:
                    continue
                if best is None or (node.end_lineno - node.lineno) < (best.end_lineno - best.lineno):
                    best = node
        if best is not None:
            lines |= set(range(best.lineno, best.end_lineno + 1))
        else:
            lines.add(r)
    return lines | set(range(row, (end_row or row) + 1))


def _self_calls(fn: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
            names.add(node.func.attr)
    return names


def _method_to_call(cls: ast.ClassDef, method: str | None) -> str:
    """``forward`` when the flagged method runs as part of it (or builds the module), else the method."""
    if method in (None, "forward", "__init__", "__call__"):
        return "forward"
    methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if "forward" not in methods:
        return method
    seen, todo = set(), ["forward"]
    while todo:
        name = todo.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        todo.extend(_self_calls(methods[name]))
    return "forward" if method in seen else method


def _references(node: ast.AST, names: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in names:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in names:
            return True
    return False


def _using_parts(node: ast.AST) -> list[ast.AST]:
    """Where a class can use another: its methods, except weight initialisers (``isinstance`` checks)."""
    if not isinstance(node, ast.ClassDef):
        return [node]
    return [n for n in node.body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                         and n.name.startswith("_init_"))]


def _has_forward(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "forward" for n in node.body)


def _users(defs: list, name: str, path_rows: set[int]) -> list[tuple[ast.AST, int]]:
    """Classes with a ``forward`` that (transitively, through classes and functions of the file) use ``name``."""
    found: list[tuple[ast.AST, int]] = []
    frontier, seen, depth = {name}, {name}, 0
    while frontier and depth < 3:
        depth += 1
        nxt = set()
        for node in defs:
            if node.name in seen or not any(_references(part, frontier) for part in _using_parts(node)):
                continue
            seen.add(node.name)
            nxt.add(node.name)
            if _has_forward(node):
                found.append((node, depth))
        frontier = nxt

    def key(item):
        node, depth = item
        holds_path = any(_contains(node, r) for r in path_rows)
        return (not holds_path, depth, node.lineno)

    return sorted(found, key=key)


def targets_for(text: str, row: int, path_rows: set[int] | None = None) -> tuple[list[Target], str]:
    """Candidate targets for a finding at ``row`` (best first), or ([], why none)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError) as exc:
        return [], f"the file does not parse ({type(exc).__name__})"
    defs = _top_level(tree)
    path_rows = set(path_rows or ())
    enclosing = next((d for d in defs if _contains(d, row)), None)
    if enclosing is None:
        return [], f"line {row} is not inside a class or a top-level function (module-level code)"
    out: list[Target] = []
    if isinstance(enclosing, ast.ClassDef):
        method = next((n.name for n in enclosing.body
                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _contains(n, row)), None)
        out.append(Target("class", enclosing.name, _method_to_call(enclosing, method), "encloses the finding"))
    else:
        out.append(Target("function", enclosing.name, "", "encloses the finding"))
    for node, _depth in _users(defs, enclosing.name, path_rows):
        holds = sorted(r for r in path_rows if _contains(node, r))
        why = f"uses {enclosing.name}" + (f" and holds the dataflow path's line {holds[0]}" if holds else "")
        out.append(Target("class", node.name, "forward", why))
    return out[:MAX_CANDIDATES], ""


def containers(text: str, name: str) -> dict[str, int]:
    """Classes of the file that hold ``name`` (directly or through other classes of the file), with the
    number of the file's classes each one holds: the smallest model around a module is built first."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    classes = {d.name: d for d in _top_level(tree) if isinstance(d, ast.ClassDef)}
    uses = {n: {m for m in classes if m != n and any(_references(part, {m}) for part in _using_parts(node))}
            for n, node in classes.items()}
    out = {}
    for owner in classes:
        seen, todo = set(), [owner]
        while todo:
            for used in uses[todo.pop()]:
                if used not in seen:
                    seen.add(used)
                    todo.append(used)
        if name in seen:
            out[owner] = len(seen)
    return out
