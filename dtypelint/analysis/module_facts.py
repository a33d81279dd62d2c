"""What a module class declares about its tensors, read from ``__init__`` and class attributes.

For each ``nn.Module`` subclass: the submodules ``__init__`` assigns (class, explicit
``dtype=torch.float32``, ``.float()``), ``nn.Parameter`` / ``register_buffer`` and
plain tensor attributes with the dtype and shape their constructor gives (0-dim vs
``[1]``-shaped matters: facts §2.1), scalars, and the class attributes
``_keep_in_fp32_modules(_strict)``.  These facts are plain frozen data so they can
live in the project index and be used across files.
"""

from __future__ import annotations

import ast
import contextvars
from dataclasses import dataclass, field, replace
from typing import Any

from dtypelint.analysis.api import load_api
from dtypelint.analysis.names import Names, canonical_torch


@dataclass(frozen=True)
class AttrFact:
    name: str
    kind: str  # param | buffer | tensor | module | scalar | none | other
    dtype: str = "unknown"  # default | fp32 | fp64 | int | bool | lowexp | unknown
    shape: str = "?"  # 0dim | [1] | source text of the shape | ?
    cls: str = ""  # qualified class of a submodule
    fp32: bool = False  # explicitly fp32 (dtype=torch.float32 / .float()): kept fp32 when loaded
    elem: str = ""  # class of the elements of an nn.ModuleList / nn.Sequential of one class
    chain: tuple[str, ...] = ()  # the classes of an nn.Sequential, in call order
    row: int = 0
    col: int = 0
    filename: str = ""
    alts: tuple[str, ...] = ()  # other classes a conditional expression may choose
    optional: bool = False  # `__init__` may also leave it None (`Embedding(...) if n else None`)
    recast: bool = False  # a method other than `__init__` converts it (`self.sub.float()`): dtype unknown
    items: tuple[tuple[Any, str, bool], ...] = ()  # (key, class, explicit fp32) of ModuleDict/Sequential/ModuleList
    elem_chain: tuple[str, ...] = ()  # the element of a ModuleList is an nn.Sequential of these classes
    persistent: bool = True  # False: `register_buffer(..., persistent=False)` / `nn.Buffer(..., persistent=False)`
    expr: Any = field(default=None, compare=False, repr=False)  # the assigned expression ("other" values)


@dataclass(frozen=True)
class ClassFacts:
    qname: str
    bases: tuple[str, ...]
    keep: tuple[str, ...]
    keep_strict: tuple[str, ...]
    attrs: tuple[AttrFact, ...]
    methods: tuple[str, ...]
    filename: str
    row: int = 0
    keep_set: bool = False  # the class body assigns `_keep_in_fp32_modules` (even to None/[])
    keep_strict_set: bool = False

    def attr(self, name: str) -> AttrFact | None:
        for a in self.attrs:
            if a.name == name:
                return a
        return None


# the methods of the class whose ``__init__`` is being read (helpers like ``self._build_freqs()``)
_METHODS: contextvars.ContextVar[dict] = contextvars.ContextVar("dtypelint_methods", default={})

TENSOR_DTYPES = {"fp32": "fp32", "fp64": "fp64", "int": "int", "bool": "bool",
                 "float16": "lowexp", "bfloat16": "lowexp"}


def dtype_of_expr(node: ast.AST | None, names: Names) -> str | None:
    """``torch.float32`` -> "fp32", ``torch.bfloat16`` -> "bfloat16"; None if not a dtype literal."""
    if node is None:
        return None
    q = names.qualify(node)
    if q and q.startswith("torch."):
        return load_api().dtypes.get(q[6:])
    return None


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def _shape_of(args: list[ast.AST]) -> str:
    if not args:
        return "?"
    if len(args) == 1:
        a = args[0]
        if isinstance(a, (ast.Tuple, ast.List)) and not a.elts:
            return "0dim"
        if isinstance(a, (ast.Tuple, ast.List)) and len(a.elts) == 1:
            a = a.elts[0]
        if isinstance(a, ast.Constant) and a.value == 1:
            return "[1]"
        return "[" + ast.unparse(args[0]).strip("()[]") + "]"
    if all(isinstance(a, ast.Constant) and a.value == 1 for a in args):
        return "[" + ", ".join("1" for _ in args) + "]"
    return "[" + ", ".join(ast.unparse(a) for a in args) + "]"


def classify_tensor(node: ast.AST, names: Names, local: dict[str, ast.AST], depth: int = 0,
                    methods: dict[str, ast.FunctionDef] | None = None) -> tuple[str, str, bool]:
    """(dtype, shape, is_tensor) of a tensor-building expression in ``__init__``."""
    api = load_api()
    if methods is None:
        methods = _METHODS.get()
    if depth > 8:
        return "unknown", "?", False
    if isinstance(node, ast.Name) and node.id in local:
        return classify_tensor(local[node.id], names, local, depth + 1)
    if isinstance(node, ast.Call):
        f = node.func
        dt_kw = dtype_of_expr(_kw(node, "dtype"), names)
        q = names.qualify(f)
        if q:
            q = canonical_torch(q)
            op = api.torch_op(q) if q.startswith("torch.") else None
            if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer") and node.args:
                return classify_tensor(node.args[0], names, local, depth + 1)
            if op in api.default_float or op in api.arange_like:
                if dt_kw:
                    dtype = TENSOR_DTYPES.get(dt_kw, "unknown")
                elif _kw(node, "dtype") is not None:
                    dtype = "unknown"
                elif op in api.arange_like or op == "tensor" or op == "full":
                    vals = node.args[1:2] if op == "full" else node.args
                    if op == "tensor" and node.args:
                        vals = [node.args[0]]
                    is_float = any(isinstance(a, ast.Constant) and isinstance(a.value, float) for a in vals)
                    is_bool = any(isinstance(a, ast.Constant) and isinstance(a.value, bool) for a in vals)
                    nonconst = any(not isinstance(a, ast.Constant) for a in vals)
                    if op == "tensor" and nonconst:
                        dtype = "default"
                    else:
                        dtype = "default" if is_float else ("bool" if is_bool else ("int" if not nonconst else "default"))
                else:
                    dtype = "default"
                if op == "tensor":
                    shape = "0dim" if node.args and isinstance(node.args[0], (ast.Constant, ast.UnaryOp, ast.BinOp, ast.Name, ast.Attribute)) else "?"
                    if node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
                        shape = f"[{len(node.args[0].elts)}]"
                elif op in api.arange_like:
                    shape = "?"
                else:
                    shape = _shape_of([a for a in node.args if not isinstance(a, ast.Starred)][: (1 if op == "full" else None)] if op != "full" else node.args[:1])
                return dtype, shape, True
            if op in api.like and node.args:
                d, s, _ = classify_tensor(node.args[0], names, local, depth + 1)
                return (TENSOR_DTYPES.get(dt_kw, d) if dt_kw else d), s, True
            if op is not None and op not in api.integer and op not in api.boolean:
                # other torch functions (exp, outer, cat, ...): the dtype of their tensor arguments
                best = ("unknown", "?", False)
                for a in node.args:
                    if isinstance(a, (ast.List, ast.Tuple)):
                        a = a.elts[0] if a.elts else a
                    d, s_, t = classify_tensor(a, names, local, depth + 1)
                    if t:
                        if dt_kw:
                            d = TENSOR_DTYPES.get(dt_kw, d)
                        if best[2] is False or d in ("fp32", "fp64"):
                            best = (d, "?", True)
                return best
            fn = names.local_defs.get(q.rsplit(".", 1)[-1]) if names.module_name and q == f"{names.module_name}.{q.rsplit('.', 1)[-1]}" else None
            if isinstance(fn, ast.FunctionDef):
                return _classify_return(fn, names, depth)

        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"
                and f.attr in methods):
            return _classify_return(methods[f.attr], names, depth)
        if isinstance(f, ast.Attribute):
            m = f.attr
            base_d, base_s, base_t = classify_tensor(f.value, names, local, depth + 1)
            if m in api.casts:
                c = api.casts[m]
                return TENSOR_DTYPES.get(c, c), base_s, True
            if m == "to":
                for a in list(node.args) + [k.value for k in node.keywords if k.arg == "dtype"]:
                    d = dtype_of_expr(a, names)
                    if d:
                        return TENSOR_DTYPES.get(d, "unknown"), base_s, True
                return base_d, base_s, base_t
            if m in api.new:
                return (TENSOR_DTYPES.get(dt_kw, "unknown") if dt_kw else base_d), "?", True
            if base_t:
                keeps_shape = m in ("exp", "log", "sqrt", "clone", "detach", "neg", "abs", "clamp", "fill_",
                                    "normal_", "uniform_", "zero_", "requires_grad_", "contiguous")
                return base_d, (base_s if keeps_shape else "?"), True
        return "unknown", "?", False
    if isinstance(node, ast.BinOp):
        ld, ls, lt = classify_tensor(node.left, names, local, depth + 1)
        rd, rs, rt = classify_tensor(node.right, names, local, depth + 1)
        if not (lt or rt):
            return "unknown", "?", False
        ds = {d for d, t in ((ld, lt), (rd, rt)) if t}
        if "fp64" in ds:
            d = "fp64"
        elif "fp32" in ds:
            d = "fp32"
        elif ds <= {"int", "bool"}:
            d = "default" if isinstance(node.op, ast.Div) or _has_float_const(node) else "int"
        else:
            d = "default" if "default" in ds else ds.pop()
        shape = ls if lt else rs
        return d, shape, True
    if isinstance(node, ast.UnaryOp):
        return classify_tensor(node.operand, names, local, depth + 1)
    if isinstance(node, ast.Subscript):
        d, _, t = classify_tensor(node.value, names, local, depth + 1)
        return d, "?", t
    return "unknown", "?", False


def _classify_return(fn: ast.FunctionDef, names: Names, depth: int) -> tuple[str, str, bool]:
    """A helper (function or method) builds the tensor: classify what it returns."""
    flocal: dict[str, ast.AST] = {}
    for st in _statements(fn.body):
        if isinstance(st, ast.Assign):
            for t in st.targets:
                if isinstance(t, ast.Name):
                    flocal[t.id] = st.value
        elif isinstance(st, ast.Return) and st.value is not None:
            d, _, t = classify_tensor(st.value, names, flocal, depth + 1)
            return d, "?", t
    return "unknown", "?", False


def _has_float_const(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, float) for n in ast.walk(node))


def _str_list(node: ast.AST) -> tuple[str, ...]:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return tuple(e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return ()


def _module_call(node: ast.AST, names: Names, depth: int = 0) -> tuple[str, bool] | None:
    """(qualified class, explicit fp32) when ``node`` constructs a module instance."""
    fp32 = False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("float", "to", "half", "cuda", "requires_grad_"):
        if node.func.attr == "float" or (node.func.attr == "to" and any(dtype_of_expr(a, names) == "fp32" for a in node.args)):
            fp32 = True
        node = node.func.value
    api = load_api()
    if isinstance(node, ast.Subscript):
        # `ACT2FN[config.hidden_act]`: a library mapping of names to module instances
        q = names.qualify(node.value)
        eco = api.ecosystem.get(canonical_torch(q)) if q else None
        if eco is not None and eco.access == "subscript":
            return canonical_torch(q), fp32
        return None
    if not isinstance(node, ast.Call):
        return None
    q = names.qualify(node.func)
    if q:
        q = canonical_torch(q)
        eco = api.ecosystem.get(q)
        if eco is not None and eco.access == "module-call":
            return q, fp32  # `get_activation("gelu")`, `create_act_layer(...)`: a module instance
        fn = names.local_defs.get(q.rsplit(".", 1)[-1]) if q == f"{names.module_name}.{q.rsplit('.', 1)[-1]}" else None
        if isinstance(fn, ast.FunctionDef) and depth < 3:
            built = _factory_class(fn, names, depth)
            return (built[0], fp32 or built[1]) if built is not None else None
    if not q and isinstance(node.func, ast.Name):
        chosen = _INIT_CTX.get().get(node.func.id)
        if chosen is not None:
            # `act_layer(...)` with `act_layer=nn.GELU` as the parameter default, or
            # `act_layer = get_act_layer(name)` earlier in `__init__`
            return chosen, fp32
        if node.func.id[:1].isupper():
            q = node.func.id
        else:
            return None
    if not q:
        return None
    last = q.rsplit(".", 1)[-1]
    if not last[:1].isupper():
        return None
    if q in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"):
        return None
    if dtype_of_expr(_kw(node, "dtype"), names) == "fp32":
        fp32 = True
    return q, fp32


def _factory_class(fn: ast.FunctionDef, names: Names, depth: int) -> tuple[str, bool] | None:
    """The module class a helper builds (``def make_block(d): return Block(d)``), if it is one class."""
    found = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            mc = _module_call(node.value, names, depth + 1)
            if mc is None:
                return None
            found.add(mc)
    return found.pop() if len(found) == 1 else None


# names bound in the `__init__` being read to module classes: parameters whose default is a torch.nn
# class (`act_layer=nn.GELU`) and locals assigned a library's layer lookup (`get_act_layer(name)`)
_INIT_CTX: contextvars.ContextVar[dict] = contextvars.ContextVar("dtypelint_init_classes", default={})
# `__init__` parameters whose default is None (`temperature=None`): an attribute set from one may be None
_NONE_PARAMS: contextvars.ContextVar[frozenset] = contextvars.ContextVar("dtypelint_none_params", default=frozenset())


def _init_classes(init, names: Names) -> dict[str, str]:
    out: dict[str, str] = {}
    if init is None:
        return out
    api = load_api()
    a = init.args
    positional = list(a.posonlyargs) + list(a.args)
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
    for p, d in pairs:
        if d is None:
            continue
        q = names.qualify(d)
        if q and canonical_torch(q).startswith("torch.nn.") and api.module_kind.get(canonical_torch(q)[9:]) in (
                "keep", "norm_fp32", "softmax"):
            out[p.arg] = canonical_torch(q)
    for node in _statements(init.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call):
            q = names.qualify(node.value.func)
            eco = api.ecosystem.get(canonical_torch(q)) if q else None
            if eco is not None and eco.access == "class-call":
                out[node.targets[0].id] = canonical_torch(q)
    return out


def _none_params(init) -> frozenset:
    if init is None:
        return frozenset()
    a = init.args
    positional = list(a.posonlyargs) + list(a.args)
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
    return frozenset(p.arg for p, d in pairs if isinstance(d, ast.Constant) and d.value is None)


def _callable_name(node: ast.AST, names: Names) -> str | None:
    """The qualified function an attribute is bound to (``self.attn_fn = flash_attn_func``)."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    q = names.qualify(node)
    if not q:
        return None
    q = canonical_torch(q)
    last = q.rsplit(".", 1)[-1]
    if not last[:1].islower() or (q.startswith("torch.") and q[6:] in load_api().dtypes) or q.startswith("math."):
        return None
    return q


def _dict_classes(node: ast.AST, names: Names) -> tuple[str, ...]:
    """Classes of the values of ``nn.ModuleDict({...})`` in order (empty if any is unknown)."""
    if not isinstance(node, ast.Dict):
        return ()
    out = []
    for v in node.values:
        mc = _module_call(v, names)
        if mc is None:
            return ()
        out.append(mc[0])
    return tuple(out)


def _param_list(name: str, value: ast.Call, names: Names, local: dict, row: int, col: int, filename: str) -> AttrFact:
    """``nn.ParameterList([nn.Parameter(torch.zeros(d)) for ...])``: the dtype of its parameters."""
    items: list[ast.AST] = []
    if value.args:
        a = value.args[0]
        if isinstance(a, (ast.ListComp, ast.GeneratorExp)):
            items = [a.elt]
        elif isinstance(a, (ast.List, ast.Tuple)):
            items = list(a.elts)
        elif isinstance(a, ast.Dict):
            items = list(a.values)
    dtypes = {classify_tensor(i, names, local)[0] for i in items}
    d = dtypes.pop() if len(dtypes) == 1 else ("unknown" if items else "pending")
    return AttrFact(name, "plist", d, "?", fp32=(d == "fp32"), row=row, col=col, filename=filename)


def class_facts(cls: ast.ClassDef, names: Names, filename: str) -> ClassFacts:
    qname = f"{names.module_name}.{cls.name}" if names.module_name else cls.name
    bases = tuple(b for b in (names.qualify(b) or (b.id if isinstance(b, ast.Name) else None) for b in cls.bases) if b)
    keep: tuple[str, ...] = ()
    keep_strict: tuple[str, ...] = ()
    keep_set = keep_strict_set = False
    methods = []
    attrs: dict[str, AttrFact] = {}
    for stmt in cls.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name) and stmt.value is not None:
                    if t.id == "_keep_in_fp32_modules":
                        keep, keep_set = _str_list(stmt.value), True
                    elif t.id == "_keep_in_fp32_modules_strict":
                        keep_strict, keep_strict_set = _str_list(stmt.value), True
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods.append(stmt.name)
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    token = _METHODS.set({s.name: s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name != "__init__"})
    token2 = _INIT_CTX.set(_init_classes(init, names))
    token3 = _NONE_PARAMS.set(_none_params(init))
    try:
        _read_init(init, names, filename, attrs)
    finally:
        _METHODS.reset(token)
        _INIT_CTX.reset(token2)
        _NONE_PARAMS.reset(token3)
    _mark_recast(cls, init, names, attrs)
    return ClassFacts(qname, bases, keep, keep_strict, tuple(attrs.values()), tuple(methods), filename, cls.lineno,
                      keep_set, keep_strict_set)


def _mark_recast(cls: ast.ClassDef, init, names: Names, attrs: dict) -> None:
    """Submodules that a method other than ``__init__`` converts (``self.vision.float()``): at run
    time their dtype depends on when that method runs, so the analysis does not claim one."""
    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or item is init or item.name == "forward":
            continue
        for node in ast.walk(item):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("float", "half", "bfloat16", "to", "double"):
                tgt = node.func.value
                if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self" \
                        and tgt.attr in attrs and attrs[tgt.attr].kind == "module":
                    if node.func.attr == "to" and not any(dtype_of_expr(a, names) for a in
                                                          list(node.args) + [k.value for k in node.keywords]):
                        continue
                    attrs[tgt.attr] = replace(attrs[tgt.attr], recast=True)


def _read_init(init, names: Names, filename: str, attrs: dict) -> None:
    if init is not None:
        local: dict[str, ast.AST] = {}
        appended: dict[str, set[str]] = {}  # classes appended to an empty ModuleList attribute
        for node in _statements(init.body):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        local[t.id] = node.value
                    elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        attrs[t.attr] = _attr_fact(t.attr, node.value, names, local, filename, t, attrs.get(t.attr))
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                t = node.target
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    attrs[t.attr] = _attr_fact(t.attr, node.value, names, local, filename, t, attrs.get(t.attr))
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = node.value
                f = call.func
                if isinstance(f, ast.Attribute) and f.attr in ("append", "extend") and call.args \
                        and isinstance(f.value, ast.Attribute) and isinstance(f.value.value, ast.Name) \
                        and f.value.value.id == "self" and f.value.attr in attrs:
                    # `self.experts = nn.ModuleList()` ... `self.experts.append(Expert(d))`
                    a = attrs[f.value.attr]
                    if a.kind == "plist":
                        d, _, _ = classify_tensor(call.args[0], names, local)
                        if a.dtype in ("pending", d):
                            attrs[f.value.attr] = replace(a, dtype=d, fp32=(d == "fp32"))
                        elif a.dtype != d:
                            attrs[f.value.attr] = replace(a, dtype="unknown", fp32=False)
                    if a.kind == "module" and a.cls == "torch.nn.ModuleList" and (not a.elem or f.value.attr in appended):
                        arg = call.args[0]
                        classes = [c for c, _ in _module_alternatives(arg, names)] or [""]
                        seen = appended.setdefault(f.value.attr, [])
                        for elem in classes:
                            if elem not in seen:
                                seen.append(elem)
                        one = seen[0] if len(seen) == 1 else ""
                        # every appended class is a member (keep lists reach them through `chain`)
                        attrs[f.value.attr] = replace(a, elem=one, chain=tuple(c for c in seen if c),
                                                      elem_chain=_sequential_chain_of(arg, names) if one else ())
                if isinstance(f, ast.Attribute) and f.attr in ("register_buffer", "register_parameter") and call.args:
                    name_node = call.args[0]
                    val = call.args[1] if len(call.args) > 1 else _kw(call, "tensor") or _kw(call, "param")
                    if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str) and val is not None:
                        d, s, is_t = classify_tensor(val, names, local)
                        if isinstance(val, ast.Constant) and val.value is None:
                            attrs[name_node.value] = AttrFact(name_node.value, "none", row=call.lineno, col=call.col_offset + 1, filename=filename)
                        else:
                            attrs[name_node.value] = AttrFact(
                                name_node.value, "buffer" if f.attr == "register_buffer" else "param",
                                d if is_t or d != "unknown" else "unknown", s, fp32=(d == "fp32"),
                                row=call.lineno, col=call.col_offset + 1, filename=filename,
                                persistent=not (f.attr == "register_buffer" and _non_persistent(call, 2)))
                # `self.x.float()` / `self.x.to(torch.float32)` in __init__
                if isinstance(f, ast.Attribute) and (f.attr == "float" or (f.attr == "to" and any(dtype_of_expr(a, names) == "fp32" for a in call.args))):
                    tgt = f.value
                    if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self" and tgt.attr in attrs:
                        a = attrs[tgt.attr]
                        attrs[tgt.attr] = replace(a, dtype="fp32" if a.kind != "module" else a.dtype, fp32=True)


def _non_persistent(call: ast.Call, position: int) -> bool:
    """``persistent=False`` (keyword, or the positional argument at ``position``): the buffer is not in the
    state dict, so a loader never sees it (keep lists do not apply to it)."""
    node = next((k.value for k in call.keywords if k.arg == "persistent"), None)
    if node is None and len(call.args) > position:
        node = call.args[position]
    return isinstance(node, ast.Constant) and node.value is False


def _statements(body: list[ast.stmt]):
    for s in body:
        yield s
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for part in ("body", "orelse", "finalbody"):
            sub = getattr(s, part, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                yield from _statements(sub)
        for h in getattr(s, "handlers", []) or []:
            yield from _statements(h.body)


def _module_alternatives(node: ast.AST, names: Names) -> list[tuple[str, bool]]:
    """The module classes an expression may construct: one, both sides of `a if c else b`, or every
    class a factory helper returns."""
    if isinstance(node, ast.IfExp):
        out = _module_alternatives(node.body, names) + _module_alternatives(node.orelse, names)
        return list(dict.fromkeys(out))
    if isinstance(node, ast.Call):
        q = names.qualify(node.func)
        if q and names.module_name and q == f"{names.module_name}.{q.rsplit('.', 1)[-1]}":
            fn = names.local_defs.get(q.rsplit(".", 1)[-1])
            if isinstance(fn, ast.FunctionDef):
                found: list[tuple[str, bool]] = []
                for r in ast.walk(fn):
                    if isinstance(r, ast.Return) and r.value is not None:
                        mc = _module_call(r.value, names, 1)
                        if mc is None:
                            return []
                        found.append(mc)
                return list(dict.fromkeys(found))
    mc = _module_call(node, names)
    return [mc] if mc is not None else []


def _container_items(cls: str, call: ast.Call, names: Names) -> tuple[tuple[Any, str, bool], ...]:
    """(key, class, explicit fp32) of the literal members of a Sequential / ModuleList / ModuleDict."""
    if not call.args:
        return ()
    arg = call.args[0]
    out: list[tuple[Any, str, bool]] = []
    if cls == "torch.nn.ModuleDict" and isinstance(arg, ast.Dict):
        for k, v in zip(arg.keys, arg.values):
            mc = _module_call(v, names)
            if not isinstance(k, ast.Constant) or mc is None:
                return ()
            out.append((k.value, mc[0], mc[1]))
        return tuple(out)
    members = call.args if cls == "torch.nn.Sequential" else (list(arg.elts) if isinstance(arg, (ast.List, ast.Tuple)) else [])
    for i, v in enumerate(members):
        mc = _module_call(v, names)
        if mc is None:
            return ()
        out.append((i, mc[0], mc[1]))
    return tuple(out)


def _module_fact(name: str, value: ast.AST, names: Names, local: dict, row: int, col: int, filename: str,
                 previous: AttrFact | None) -> AttrFact | None:
    none_side = isinstance(value, ast.IfExp) and any(
        isinstance(x, ast.Constant) and x.value is None for x in (value.body, value.orelse))
    alts = _module_alternatives(value, names)
    if not alts:
        return None
    built = value
    if isinstance(value, ast.IfExp):
        built = value.body if not (isinstance(value.body, ast.Constant) and value.body.value is None) else value.orelse
    while isinstance(built, ast.Call) and isinstance(built.func, ast.Attribute) and built.func.attr in (
            "float", "to", "half", "cuda", "requires_grad_"):
        built = built.func.value
    cls, fp32 = alts[0]
    if cls in ("torch.nn.ParameterList", "torch.nn.ParameterDict") and isinstance(built, ast.Call):
        return _param_list(name, built, names, local, row, col, filename)
    elem, chain, items, elem_chain = "", (), (), ()
    if isinstance(built, ast.Call) and cls in ("torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"):
        items = _container_items(cls, built, names)
        if cls == "torch.nn.ModuleDict":
            classes = tuple(c for _, c, _ in items)
            elem = classes[0] if classes and len(set(classes)) == 1 else ""
            chain = classes
        elif built.args:
            elem = _element_class(built.args, names)
            if cls == "torch.nn.Sequential":
                chain = _chain(built.args, names)
            elif elem == "torch.nn.Sequential":
                elem_chain = _sequential_chain_of(built.args[0], names)
            elif not elem and cls == "torch.nn.ModuleList":
                # `ModuleList([Sliding(...) if kind(i) else Full(...) for i in ...])`: members of either class
                chain = _comprehension_classes(built.args[0], names)
    others = tuple(c for c, _ in alts[1:] if c != cls)
    optional = none_side or (previous is not None and previous.kind == "none")
    if previous is not None and previous.kind == "module":
        optional = optional or previous.optional
        if previous.cls != cls:
            # assigned in both branches of an `if` (`Gated...(config) if ... else ...`): keep both
            others = tuple(dict.fromkeys((previous.cls,) + previous.alts + others))
    return AttrFact(name, "module", cls=cls, fp32=all(f for _, f in alts) and fp32, elem=elem, chain=chain,
                    row=row, col=col, filename=filename, alts=others, optional=optional, items=items,
                    elem_chain=elem_chain)


def _sequential_chain_of(node: ast.AST, names: Names) -> tuple[str, ...]:
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        node = node.elt
    elif isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        node = node.elts[0]
    if isinstance(node, ast.Call) and _module_call(node, names) == ("torch.nn.Sequential", False):
        return _chain(node.args, names)
    return ()


def _attr_fact(name: str, value: ast.AST, names: Names, local: dict[str, ast.AST], filename: str,
               at: ast.AST, previous: AttrFact | None) -> AttrFact:
    row, col = at.lineno, at.col_offset + 1
    if isinstance(value, ast.Constant):
        if value.value is None:
            if previous is not None and previous.kind == "module":
                return replace(previous, optional=True)
            return previous if previous is not None and previous.kind != "none" else AttrFact(name, "none", row=row, col=col, filename=filename)
        return AttrFact(name, "scalar", row=row, col=col, filename=filename)
    if isinstance(value, ast.Call):
        q = names.qualify(value.func)
        if q and canonical_torch(q) in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"):
            d, s, _ = classify_tensor(value, names, local)
            kind = "buffer" if q.endswith("Buffer") else "param"
            return AttrFact(name, kind, d if d != "unknown" else "unknown", s, fp32=(d == "fp32"), row=row, col=col,
                            filename=filename, persistent=not _non_persistent(value, 1))
    if isinstance(value, (ast.Call, ast.IfExp, ast.Subscript)):
        mf = _module_fact(name, value, names, local, row, col, filename, previous)
        if mf is not None:
            return mf
    if isinstance(value, ast.IfExp):
        qa, qb = _callable_name(value.body, names), _callable_name(value.orelse, names)
        if qa and qb:
            return AttrFact(name, "callable", cls=qa, alts=() if qa == qb else (qb,), row=row, col=col, filename=filename)
    if isinstance(value, (ast.Name, ast.Attribute)):
        fn_q = _callable_name(value, names)
        if fn_q is not None:
            return AttrFact(name, "callable", cls=fn_q, row=row, col=col, filename=filename)
    if isinstance(value, ast.Name) and value.id in _NONE_PARAMS.get() and value.id not in local:
        # `self.temperature = temperature` with `temperature=None`: a Python value or None
        return AttrFact(name, "optional", row=row, col=col, filename=filename)
    d, s, is_t = classify_tensor(value, names, local)
    if is_t:
        return AttrFact(name, "tensor", d, s, fp32=(d == "fp32"), row=row, col=col, filename=filename)
    if isinstance(value, ast.Name) and value.id in local:
        return _attr_fact(name, local[value.id], names, local, filename, at, previous)
    if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Attribute, ast.Name, ast.BoolOp, ast.IfExp, ast.Compare)) and not any(
            isinstance(n, ast.Call) for n in ast.walk(value)):
        # computed from config values and constants: a Python scalar, never a tensor
        return AttrFact(name, "scalar", row=row, col=col, filename=filename)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and names.qualify(value.func) in ("math.sqrt", "math.log", "math.exp"):
        return AttrFact(name, "scalar", row=row, col=col, filename=filename)
    return AttrFact(name, "other", row=row, col=col, filename=filename, expr=value)

def _element_class(args: list[ast.AST], names: Names) -> str:
    """The one class of ``ModuleList([Block(...) for _ in range(n)])`` / ``Sequential(A(), A())``."""
    elts: list[ast.AST] = []
    for a in args:
        if isinstance(a, (ast.ListComp, ast.GeneratorExp)):
            elts.append(a.elt)
        elif isinstance(a, (ast.List, ast.Tuple)):
            elts.extend(a.elts)
        else:
            elts.append(a)
    while any(isinstance(e, ast.IfExp) for e in elts):  # `A(d, window=4) if i % 2 else A(d)`: both sides
        elts = [x for e in elts for x in ((e.body, e.orelse) if isinstance(e, ast.IfExp) else (e,))]
    classes = set()
    for e in elts:
        mc = _module_call(e, names)
        if mc is None:
            return ""
        classes.add(mc[0])
    return classes.pop() if len(classes) == 1 else ""


def _comprehension_classes(arg: ast.AST, names: Names) -> tuple[str, ...]:
    """The classes of ``[A(...) if c else B(...) for ...]`` (empty unless every side builds a known module)."""
    if not isinstance(arg, (ast.ListComp, ast.GeneratorExp)) or not isinstance(arg.elt, ast.IfExp):
        return ()
    alts = _module_alternatives(arg.elt, names)
    if len(alts) < 2 or any(not c for c, _ in alts):
        return ()
    return tuple(dict.fromkeys(c for c, _ in alts))


def _chain(args: list[ast.AST], names: Names) -> tuple[str, ...]:
    """Classes of ``nn.Sequential(nn.SiLU(), nn.Linear(...))`` in order (empty if any is unknown)."""
    out = []
    for a in args:
        mc = _module_call(a, names)
        if mc is None:
            return ()
        out.append(mc[0])
    return tuple(out)
