"""Expressions: names, containers, comprehensions, operators, attributes, subscripts.

Type promotion follows facts §2.1 (``lattice.promote``); ``1/x`` and ``x ** 2`` are
``reciprocal``/``pow``, fp32 under CUDA autocast.  Containers keep one value per item,
so ``q, k, v = (t.view(...) for t in (q, k, v))`` keeps each tensor's own dtype and
provenance; a list grown with ``append`` is a sequence of the joined items.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from dtypelint.analysis.events import Operand
from dtypelint.analysis.interp.values import CAST_UNKNOWN, SHAPE, FuncRef, floating_truth, is_cast_unknown
from dtypelint.analysis.lattice import NONE, SCALAR, UNKNOWN, Val, dtype_name, dtype_val, join, promote, tensor
from dtypelint.analysis.names import canonical_torch
from dtypelint.analysis.paths import clause, signature

MAX_ITEMS = 12  # comprehensions over longer tuples are not unrolled
_DISPATCH: dict[type, object] = {}  # ast node type -> the evaluating method


def _generic(self, node: ast.AST, env) -> Val:
    """An expression the analysis has no rule for: its parts are still evaluated (they may hold sinks)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.expr):
            self.eval(child, env)
    return UNKNOWN


class ExprMixin:
    # -- dispatch -----------------------------------------------------------------------
    def eval(self, node: ast.AST | None, env: dict[str, Val]) -> Val:
        if node is None:
            return NONE
        m = _DISPATCH.get(type(node))
        if m is None:
            m = _DISPATCH[type(node)] = getattr(type(self), "e_" + type(node).__name__, _generic)
        return m(self, node, env)

    def qualify(self, node: ast.AST, env: dict[str, Val]) -> str | None:
        head = node
        while isinstance(head, ast.Attribute):
            head = head.value
        if isinstance(head, ast.Name) and head.id in env:
            return None
        q = self.fa.names.qualify(node)
        return canonical_torch(q) if q else None

    def operand(self, node: ast.AST | None, v: Val) -> Operand:
        return Operand(None, v, node, self.fa)

    # -- atoms --------------------------------------------------------------------------
    def e_Constant(self, n: ast.Constant, env) -> Val:
        v = n.value
        if isinstance(v, bool):
            return Val("pybool", const=v)
        if v is None:
            return NONE
        if isinstance(v, (int, float)):
            return Val("scalar", scalar_float=isinstance(v, float), const=v)
        if isinstance(v, str):
            return Val("str", const=v)
        return UNKNOWN

    def e_Name(self, n: ast.Name, env) -> Val:
        if n.id in env:
            return env[n.id]
        fn = self.fa.functions.get(n.id)
        if fn is not None:
            return Val("func", ref=FuncRef(fn, None, self.fa))
        if n.id in ("True", "False"):
            return Val("pybool", const=n.id == "True")
        g = self.fa.global_value(n.id, self)
        if g is not None:
            return g
        q = self.fa.names.qualify(n)
        if q and n.id in self.fa.names.aliases:
            return Val("qname", const=canonical_torch(q))
        return UNKNOWN

    def e_Tuple(self, n, env) -> Val:
        items: list[Val] = []
        for e in n.elts:
            if isinstance(e, ast.Starred):
                v = self.eval(e.value, env)
                if v.kind == "tuple":
                    items.extend(v.items)
                    continue
                return Val("seq", ref=self.element(v))
            items.append(self.eval(e, env))
        return Val("tuple", items=tuple(items))

    e_List = e_Tuple
    e_Set = e_Tuple

    def e_Dict(self, n: ast.Dict, env) -> Val:
        keys, vals = [], []
        for k, v in zip(n.keys, n.values):
            vals.append(self.eval(v, env))
            keys.append(k.value if isinstance(k, ast.Constant) else None)
        return Val("dict", items=tuple(vals), const=tuple(keys))

    def e_Lambda(self, n: ast.Lambda, env) -> Val:
        return Val("func", ref=FuncRef(n, self.cls, self.fa))

    def e_ListComp(self, n, env) -> Val:
        """Comprehensions: over a known tuple with one generator, one item per element."""
        if len(n.generators) == 1 and not n.generators[0].ifs:
            g = n.generators[0]
            it = self.eval(g.iter, env)
            if it.kind == "tuple" and 0 < len(it.items) <= MAX_ITEMS:
                items = []
                for item in it.items:
                    local = dict(env)
                    self.bind(g.target, item, local, None)
                    items.append(self.eval(n.elt, local))
                return Val("tuple", items=tuple(items))
        local = dict(env)
        for g in n.generators:
            it = self.eval(g.iter, local)
            self.bind(g.target, self.element(it), local, None)
            for c in g.ifs:
                self.eval(c, local)
        return Val("seq", ref=self.eval(n.elt, local))

    e_GeneratorExp = e_ListComp
    e_SetComp = e_ListComp

    def e_DictComp(self, n: ast.DictComp, env) -> Val:
        local = dict(env)
        for g in n.generators:
            self.bind(g.target, self.element(self.eval(g.iter, local)), local, None)
        v = self.eval(n.value, local)
        return Val("dict", items=(v,), const=(None,))

    def e_NamedExpr(self, n: ast.NamedExpr, env) -> Val:
        v = self.eval(n.value, env)
        self.bind(n.target, v, env, n.value)
        return v

    def e_Starred(self, n, env) -> Val:
        return self.eval(n.value, env)

    def e_IfExp(self, n: ast.IfExp, env) -> Val:
        c = self.cond(n.test, env)
        if c is True:
            return self.eval(n.body, env)
        if c is False:
            return self.eval(n.orelse, env)
        yes_env = self.refine(n.test, dict(env), True)
        no_env = self.refine(n.test, dict(env), False)
        a = self.eval(n.body, yes_env)
        b = self.eval(n.orelse, no_env)
        if signature(a) == signature(b):
            return join(a, b)
        return self.choose([(a, clause(n.test, True, self.fa.seg)), (b, clause(n.test, False, self.fa.seg))])

    # -- operators ----------------------------------------------------------------------
    def e_UnaryOp(self, n: ast.UnaryOp, env) -> Val:
        v = self.eval(n.operand, env)
        if isinstance(n.op, ast.Not):
            if v.kind == "pybool" and v.const is not None:
                return Val("pybool", const=not v.const)
            if v.kind == "none":
                return Val("pybool", const=True)
            if v.kind == "module" and not v.ref.optional:
                return Val("pybool", const=False)
            return Val("pybool", const=None) if not v.is_tensor else tensor("bool")
        if isinstance(n.op, ast.USub) and v.kind == "scalar" and isinstance(v.const, (int, float)):
            return replace(v, const=-v.const)
        return v

    def e_BoolOp(self, n: ast.BoolOp, env) -> Val:
        vals = []
        for v in n.values:
            d = self.decided(v)
            vals.append(Val("pybool", const=d) if d is not None else self.eval(v, env))
        if all(v.kind == "pybool" or v.kind == "none" for v in vals):
            consts = [(False if v.kind == "none" else v.const) for v in vals]
            if isinstance(n.op, ast.And):
                if any(c is False for c in consts):
                    return Val("pybool", const=False)
                return Val("pybool", const=True if all(c is True for c in consts) else None)
            if any(c is True for c in consts):
                return Val("pybool", const=True)
            return Val("pybool", const=False if all(c is False for c in consts) else None)
        if isinstance(n.op, ast.And):
            if any(v.kind == "pybool" and v.const is False for v in vals):
                return Val("pybool", const=False)
            return Val("pybool", const=None) if any(v.kind == "pybool" for v in vals) else vals[-1]
        # `x or default`: the first operand unless it is None
        out = None
        for v in vals:
            if v.kind == "none":
                continue
            out = v if out is None else join(out, v)
        return out if out is not None else NONE

    def e_Compare(self, n: ast.Compare, env) -> Val:
        d = self.decided(n)
        if d is not None:
            return Val("pybool", const=d)
        left = self.eval(n.left, env)
        result: bool | None = True
        tensor_cmp = False
        for op, right_node in zip(n.ops, n.comparators):
            right = self.eval(right_node, env)
            r = self.compare(op, left, right)
            if left.is_tensor or right.is_tensor:
                tensor_cmp = True
            if r is False:
                result = False
            elif r is None and result is True:
                result = None
            left = right
        if tensor_cmp and not isinstance(n.ops[0], (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
            return tensor("bool")
        return Val("pybool", const=result)

    def compare(self, op, a: Val, b: Val) -> bool | None:
        if isinstance(op, (ast.Is, ast.IsNot)):
            if a.kind == "none" and b.kind == "none":
                r = True
            elif b.kind == "none" and a.kind == "module":
                if a.ref.optional:
                    return None
                r = False
            elif b.kind == "none" and a.kind in ("scalar", "dtype", "str", "tuple", "func", "qname", "dict"):
                r = False
            elif b.kind == "none" and a.is_tensor and not self.maybe_none(a):
                r = False
            else:
                return None
            return r if isinstance(op, ast.Is) else not r
        if isinstance(op, (ast.Eq, ast.NotEq)) and a.kind == "dtype" and b.kind == "dtype":
            if a.const is None or b.const is None:
                return None
            return (a.const == b.const) == isinstance(op, ast.Eq)
        if isinstance(op, (ast.Eq, ast.NotEq)) and a.kind == "str" and b.kind == "str" and a.const is not None \
                and b.const is not None:
            return (a.const == b.const) == isinstance(op, ast.Eq)
        if isinstance(op, (ast.In, ast.NotIn)) and a.kind == "dtype" and b.kind == "tuple":
            if a.const is None or any(i.kind != "dtype" or i.const is None for i in b.items):
                return None
            r = any(i.const == a.const for i in b.items)
            return r if isinstance(op, ast.In) else not r
        return None

    @staticmethod
    def maybe_none(v: Val) -> bool:
        # activations of parameters may be optional; values computed here are not None
        return not v.prov

    def e_BinOp(self, n: ast.BinOp, env) -> Val:
        a = self.eval(n.left, env)
        b = self.eval(n.right, env)
        self.cur_env = env
        return self.binop(n.op, a, b, n, n.left, n.right)

    def binop(self, op, a: Val, b: Val, n: ast.AST, ln: ast.AST | None, rn: ast.AST | None) -> Val:
        if isinstance(op, ast.MatMult):
            self.matmul_sink(n, [self.operand(ln, a), self.operand(rn, b)], "@")
            if self.ac and (a.is_float or a.kind == "unknown") and (b.is_float or b.kind == "unknown"):
                return tensor("low")
            return self.after_sink([a, b])
        if a.kind in ("tuple", "seq") or b.kind in ("tuple", "seq"):
            if isinstance(op, ast.Add) and a.kind == b.kind == "tuple":
                return Val("tuple", items=a.items + b.items)  # tuple concatenation (`(x,) + rest`)
            return UNKNOWN
        if isinstance(op, ast.Div):
            self.eps_sink("/", b, rn, n)
        if self.ac:
            # `1/x` -> reciprocal, `x ** 2` / `2 ** x` -> pow: fp32 under CUDA autocast (facts §1.2)
            if isinstance(op, ast.Div) and a.kind == "scalar" and b.is_float and not b.zdim:
                return tensor("fp32", b.prov + (self.fa.step(n, "`1/x` is `reciprocal`, which runs in float32 under CUDA autocast"),))
            if isinstance(op, ast.Pow) and ((a.is_float and not a.zdim) or (b.is_float and not b.zdim)):
                src = a if a.is_float else b
                return tensor("fp32", src.prov + (self.fa.step(n, "`**` is `pow`, which runs in float32 under CUDA autocast"),))
        if a.kind == "scalar" and b.kind == "scalar":
            return Val("scalar", scalar_float=a.scalar_float or b.scalar_float or isinstance(op, ast.Div))
        if isinstance(op, ast.Div) and a.kind == "int" and b.kind in ("int", "scalar"):
            return tensor("fp32", (self.fa.step(n, "integer true division gives the default dtype float32"),))
        if isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
            self.constant_sink(n, {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}[type(op)], [(a, ln, rn), (b, rn, ln)])
        res, winner = promote([a, b])
        if res is None:
            wide = self.wide_despite_unknown([a, b], [ln, rn])
            if wide is not None:
                return wide
            return CAST_UNKNOWN if any(is_cast_unknown(v) for v in (a, b)) else UNKNOWN
        if isinstance(op, ast.Add) and self.residual_check(n, a, b, ln, rn):
            # reported: continue with the residual's dtype, as if the fix were applied
            return a if a.kind in ("low", "olp") else b
        what = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}.get(type(op), "operator")
        return self.promotion_step(res, [a, b], n, what, [ln, rn])

    def wide_despite_unknown(self, vals: list[Val], nodes: list) -> Val | None:
        """Promotion only widens: with a dim>=1 float32 operand the result is at least float32 whatever the
        unknown operands are (``1.0 / (self.base ** (torch.arange(0, d, 2).float() / d))``, ``t * scale``
        with ``self.base``/``d``/``scale`` unseen Python scalars).  An fp64 operand could still win; the
        result is then wider, which the float32 claim does not hide.  Values the author cast to an unseen
        dtype stay unclaimed, and so do activations (under autocast a layer's inputs are unknown: the
        residual stream may be float32 or not), so the unknown operands must look like Python scalars:
        names, attributes and constants, not a parameter taken as an activation, not an indexed tensor."""
        if any(is_cast_unknown(v) for v in vals) or len(nodes) != len(vals):
            return None
        for v, nd in zip(vals, nodes):
            if v.kind == "unknown" and not self.scalar_like(nd):
                return None
        if not any(v.kind == "unknown" for v in vals):
            return None
        wide = [v for v in vals if v.kind in ("fp32", "fp64") and not v.zdim]
        if not wide or any(v.kind not in ("unknown", "scalar", "none") and not v.is_tensor for v in vals):
            return None
        if all(v.is_tensor or v.kind in ("scalar",) for v in vals):
            return None
        return max(wide, key=lambda v: (v.kind == "fp64", len(v.prov)))

    def scalar_like(self, node: ast.AST | None, depth: int = 0) -> bool:
        """Looks like a Python scalar: constants, attribute chains (``self.base``, ``config.rope_theta``),
        parameters that are not activations (``dim``, ``base=10000``), locals only ever assigned such
        values, and arithmetic of those.  Calls, subscripts and activation parameters are not."""
        if node is None or depth > 6:
            return False
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        if isinstance(node, ast.Attribute):
            base = node
            while isinstance(base, ast.Attribute):
                base = base.value
            return isinstance(base, ast.Name) and base.id not in self.activation_params()
        if isinstance(node, ast.BinOp):
            return self.scalar_like(node.left, depth + 1) and self.scalar_like(node.right, depth + 1)
        if isinstance(node, ast.UnaryOp):
            return self.scalar_like(node.operand, depth + 1)
        if isinstance(node, ast.Tuple):
            return all(self.scalar_like(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.Name):
            args = getattr(self.fn, "args", None)
            params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} if args else set()
            if node.id in params:
                return node.id not in self.activation_params()
            values = self.fa.assignments(self.fn).get(node.id)
            return bool(values) and all(self.scalar_like(v, depth + 1) for v in values)
        return False

    def activation_params(self) -> set[str]:
        """Parameters of this function taken as activations (low-precision tensors) by default."""
        cached = self.fa.act_params.get(id(self.fn))
        if cached is None:
            args = self.fn.args
            positional = list(args.posonlyargs) + list(args.args)
            defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
            cached = {a.arg for a, d in zip(positional, defaults) if self._default_param(a, d).kind == "low"}
            self.fa.act_params[id(self.fn)] = cached
        return cached

    def promotion_step(self, res: Val, inputs: list[Val], n: ast.AST, what: str, nodes: list | None = None) -> Val:
        self.fa.fates.link([v for v in inputs if v.is_float and not v.zdim])
        if res.kind in ("fp32", "fp64") and any(v.is_float and not v.zdim and v.kind in ("low", "olp") for v in inputs):
            dn = dtype_name(res.kind, self.fa.compute)
            res = self.operand_hint(res, inputs, nodes)
            msg = f"`{what}` promotes the {self.fa.compute} operand to {dn} (type promotion to the widest input)"
            return self.promote_sink(res, inputs, nodes, n, what, msg)
        return res

    # -- attributes and subscripts --------------------------------------------------------
    def e_Attribute(self, n: ast.Attribute, env) -> Val:
        key = self.attr_key(n)
        if key and key in env:
            return env[key]
        head = n
        while isinstance(head, ast.Attribute):
            head = head.value
        if isinstance(head, ast.Name) and head.id not in env:
            q = self.qualify(n, env)
            if q:
                if q.startswith("torch.") and q[6:] in self.api.dtypes:
                    return dtype_val(self.dtype_kind(self.api.dtypes[q[6:]]))
                return Val("qname", const=q)
            return UNKNOWN
        base = self.eval(n.value, env)
        a = n.attr
        if base.kind == "self":
            return self.self_attr(a, n)
        if base.kind == "module":
            if a in ("weight", "bias"):
                return self.module_param(base.ref, a, n)
            return self.submodule_attr(base.ref, a, n)
        if base.is_tensor:
            if a == "dtype":
                return replace(dtype_val(base.kind, base.prov), hint=base.hint)
            if a in ("T", "mT", "H", "mH", "data", "real"):
                return base
            if a == "shape":
                return SHAPE
            if a == "ndim":
                return SCALAR
            return UNKNOWN
        if base.kind == "object":
            v = base.ref.attr(a)
            return v if v is not None else UNKNOWN
        if base.kind == "tuple" and a in ("values", "indices") and len(base.items) == 2:
            return base.items[0 if a == "values" else 1]  # torch.return_types (max, topk, sort, ...)
        if base.kind == "dtype" and a == "itemsize":
            return SCALAR
        if base.kind == "dtype" and a == "is_floating_point":
            return floating_truth(base.const)
        return UNKNOWN

    def dtype_kind(self, name: str) -> str:
        if name in ("float16", "bfloat16"):
            return "low" if name == self.fa.compute else "olp"
        return name

    def e_Subscript(self, n: ast.Subscript, env) -> Val:
        base = self.eval(n.value, env)
        self.eval(n.slice, env)
        if base.is_tensor or is_cast_unknown(base):
            return base
        if base.kind == "tuple":
            i = self.const_index(n.slice)
            if i is not None:
                return base.items[i] if -len(base.items) <= i < len(base.items) else UNKNOWN
            if isinstance(n.slice, ast.Slice):
                return Val("seq", ref=self.element(base))
            return self.element(base)
        if base.kind == "seq":
            return base.ref if isinstance(base.ref, Val) else UNKNOWN
        if base.kind == "dict":
            key = n.slice.value if isinstance(n.slice, ast.Constant) else None
            if key is not None and key in base.const:
                return base.items[base.const.index(key)]
            # an unknown key: one of the values (a dict of kernels picked at run time)
            alts, seen = [], set()
            for k, v in zip(base.const, base.items):
                sig = signature(v)
                if sig not in seen:
                    seen.add(sig)
                    alts.append((v, None))
            return self.choose(alts) if alts else UNKNOWN
        if base.kind == "module":
            if base.ref.items:
                return self.module_item(base.ref, n)
            if base.ref.element() is not None:
                return Val("module", ref=base.ref.element())
            return self.module_item(base.ref, n)
        if base.kind == "qname":
            return self.qname_item(base.const, n)
        if base.kind == "shape":
            return SHAPE if isinstance(n.slice, ast.Slice) else SCALAR
        return UNKNOWN

    @staticmethod
    def const_index(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
                and isinstance(node.operand.value, int):
            return -node.operand.value
        return None

    def e_Slice(self, n, env) -> Val:
        for p in (n.lower, n.upper, n.step):
            if p is not None:
                self.eval(p, env)
        return Val("slice")

    def element(self, it: Val) -> Val:
        """The value of one element of an iterable (for loops, unpacking)."""
        if it.kind == "tuple":
            out = None
            for x in it.items:
                out = x if out is None else join(out, x)
            return out or UNKNOWN
        if it.kind == "seq":
            return it.ref if isinstance(it.ref, Val) else UNKNOWN
        if it.kind == "dict":
            return Val("str") if it.const and all(isinstance(k, str) for k in it.const) else UNKNOWN
        if it.kind == "module":
            el = it.ref.element()
            if el is not None:
                return Val("module", ref=el)
            return self.module_iter(it.ref)
        if it.is_tensor:
            return it
        if it.kind in ("scalar", "shape"):
            return SCALAR
        return UNKNOWN
