"""Semantic sanity checks on fixed code: a fix must not refer to names that do not exist.

Parsing proves a fix is valid syntax, not that it runs.  A fix that casts to
``self.time_embeddings.in_layer.weight.dtype`` inside a submodule whose ``self`` has no
``time_embeddings`` parses fine and fails with ``AttributeError`` at run time.  This
check compares each function of the fixed text with the same function before the fix
and, for the references the fix *introduced*:

- a bare name must be bound in the function (parameters, assignments, loop/with/except
  targets, imports, comprehensions), in an enclosing function, at module level, or be
  a builtin;
- ``self.X`` (``self`` = the method's first parameter) must be assigned somewhere in the
  class (``self.X = ...``, ``register_buffer("X", ...)``, ``add_module``, class-level
  names, methods), or in a base class defined in the same file.  Classes with bases
  from elsewhere (other than ``nn.Module``/``object``), ``__getattr__`` or ``setattr``
  with a computed name are not checked: their attributes cannot be known here.

A violation leaves the file untouched with DTL006, like a fix that does not parse.
"""

from __future__ import annotations

import ast
import builtins

_BUILTINS = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__package__", "__builtins__"}
_MODULE_BASES = {"Module", "nn.Module", "torch.nn.Module", "object"}
_REGISTER = {"register_buffer", "register_parameter", "add_module", "register_module"}
# What every ``nn.Module`` instance has (a fix may use ``self.training`` or ``self.to``).
_MODULE_ATTRS = {
    "training", "forward", "to", "half", "float", "double", "bfloat16", "cuda", "cpu", "type", "eval", "train",
    "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children", "modules",
    "named_modules", "state_dict", "load_state_dict", "register_buffer", "register_parameter", "add_module",
    "register_module", "get_submodule", "get_parameter", "get_buffer", "apply", "zero_grad", "requires_grad_",
    "extra_repr", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "_parameters", "_buffers", "_modules", "__class__", "__dict__",
}


def _bound_in(node: ast.AST) -> set[str]:
    """Names bound anywhere in ``node``'s own scope (not descending into nested defs' bodies)."""
    out: set[str] = set()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                out.add(arg.arg)
    body = node.body if isinstance(node.body, list) else [node.body]
    stack = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            stack.extend(n.decorator_list)
            continue
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for alias in n.names:
                out.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
        elif isinstance(n, ast.MatchAs) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchStar) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            out.add(n.rest)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _functions(tree: ast.Module) -> dict[str, tuple[ast.AST, list[ast.AST]]]:
    """Qualified name -> (function node, chain of enclosing nodes from the module down)."""
    out: dict[str, tuple[ast.AST, list[ast.AST]]] = {}

    def visit(node, prefix, chain):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    out.setdefault(name, (child, chain))
                visit(child, name + ".", [*chain, child])
            else:
                visit(child, prefix, chain)

    visit(tree, "", [tree])
    return out


def _own_nodes(fn: ast.AST):
    """Nodes of ``fn``'s body, not descending into nested functions/classes (they are checked separately)."""
    stack = list(fn.body)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(n.decorator_list)
            continue
        stack.extend(ast.iter_child_nodes(n))


def _loads(fn: ast.AST, self_name: str | None) -> tuple[set[str], set[str]]:
    names, attrs = set(), set()
    for n in _own_nodes(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif self_name and isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                and n.value.id == self_name:
            attrs.add(n.attr)
    return names, attrs


def _class_attrs(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], seen=None) -> set[str] | None:
    """Attributes a class's instances have, or None when they cannot be known from this file."""
    seen = seen or set()
    if cls.name in seen:
        return set()
    seen.add(cls.name)
    attrs: set[str] = set()
    for base in cls.bases:
        text = ast.unparse(base)
        if text in _MODULE_BASES:
            attrs |= _MODULE_ATTRS
            continue
        if isinstance(base, ast.Name) and base.id in classes:
            inherited = _class_attrs(classes[base.id], classes, seen)
            if inherited is None:
                return None
            attrs |= inherited
            continue
        return None  # a base from another file: unknown attributes
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            attrs.add(stmt.name)
            if stmt.name == "__getattr__":
                return None
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        attrs.add(n.id)
    for n in ast.walk(cls):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name):
            attrs.add(n.attr)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr in _REGISTER | {"__setattr__"} or (isinstance(n.func, ast.Attribute) and n.func.attr == "setattr"):
                if n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
                    attrs.add(n.args[0].value)
                elif n.func.attr in ("__setattr__",):
                    return None
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr":
            if len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str):
                attrs.add(n.args[1].value)
            else:
                return None
    return attrs


def introduced_name_problems(old_text: str, new_text: str) -> list[str]:
    """References the fix introduced that cannot resolve (empty when all is well or unknown)."""
    try:
        old_tree, new_tree = ast.parse(old_text), ast.parse(new_text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    old_funcs = _functions(old_tree)
    new_funcs = _functions(new_tree)
    module_bound = _bound_in(new_tree)
    classes = {n.name: n for n in new_tree.body if isinstance(n, ast.ClassDef)}
    problems: list[str] = []
    for qual, (fn, chain) in new_funcs.items():
        before = old_funcs.get(qual)
        parent = chain[-1]
        self_name = None
        if isinstance(parent, ast.ClassDef) and fn.args.args and not any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list):
            self_name = fn.args.args[0].arg
        names, attrs = _loads(fn, self_name)
        if before is not None:
            old_names, old_attrs = _loads(before[0], self_name)
            names -= old_names
            attrs -= old_attrs
        if not names and not attrs:
            continue
        bound = set(module_bound) | _BUILTINS | _bound_in(fn)
        for outer in chain[1:]:
            if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bound |= _bound_in(outer)
        for name in sorted(names - bound):
            problems.append(f"`{name}` is not defined in `{qual}`")
        if attrs and isinstance(parent, ast.ClassDef):
            known = _class_attrs(parent, classes) if parent.name in classes and classes[parent.name] is parent \
                else _class_attrs(parent, {})
            if known is not None:
                for attr in sorted(attrs - known):
                    problems.append(f"`{self_name}.{attr}` is never set on `{parent.name}` (in `{qual}`)")
    return problems
