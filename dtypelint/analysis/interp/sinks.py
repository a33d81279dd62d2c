"""Sinks: where the interpreter emits ``SinkEvent``s for the rules.

The interpreter reports what reached an op with a dtype contract; the rules in
``dtypelint.rules`` judge it.  Two dtype facts stay here because interpretation itself
depends on them: after an equal-dtype sink the analysis continues in the lower
precision (as if fixed, ``CallMixin.after_sink``), and a kept module's float32 output
added to the residual continues in the residual's dtype.
"""

from __future__ import annotations

import ast

from dtypelint.analysis.constants import below_fp16_normal, beyond_fp16, numeric_constant
from dtypelint.analysis.events import Operand, Scope, SinkEvent
from dtypelint.analysis.lattice import SCALAR, Val

# ops whose argument must stay positive: an eps that vanishes in float16 leaves a zero there (facts §5)
EPS_CONSUMERS = frozenset({"rsqrt", "sqrt", "log", "log2", "log10", "reciprocal"})
# reductions that overflow float16 when they sum squares (mean/sum of a square) or compute one (var)
SQUARE_REDUCERS = frozenset({"mean", "sum", "nanmean", "nansum"})
VARIANCES = frozenset({"var", "var_mean"})
CLAMPS = frozenset({"clamp", "clamp_", "clamp_min", "clamp_min_", "clip", "clip_"})


# events of ops with a dtype contract (and DTL104's residual add): a promoted value reaching one is that event's finding
SINK_KINDS = frozenset({"matmul", "sdpa", "equal", "equal-op", "half-only", "strict", "index", "residual"})


class SinkMixin:
    def emit(self, kind: str, n: ast.AST, sink: str, operands, **detail) -> None:
        if kind in SINK_KINDS:
            for o in operands:
                if o.val.is_float:
                    self.fa.fates.reach_sink(o.val.prov)
        if not self.report:
            return
        env = self.cur_env if self.cur_env else self.state.env
        kinds = {o.val.kind for o in operands if o.val.is_float and not o.val.zdim}
        # only an event that may become a finding needs the environment (to spell a fix)
        worth = len(kinds) > 1 or kind in ("residual", "fill", "constant", "eps") or (kind in ("half-only", "return") and kinds & {"fp32", "fp64"})
        event = SinkEvent(kind, self.regime, n, sink, tuple(operands), self.ac, self.current_cond(),
                          Scope(self, env if worth else {}), self.root, self.depth, id(self.cur_stmt), detail)
        self.fa.record(event)
        return event

    def matmul_sink(self, n: ast.AST, ops: list[Operand], sink: str, module: str | None = None) -> None:
        self.emit("matmul", n, sink, ops, module=module)

    def contract_sink(self, sink, n: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> None:
        ops: list[Operand] = []
        names = sink.args or tuple(f"arg{i}" for i in range(len(args)))
        positions = sink.positions or tuple(range(len(names)))
        starred = any(isinstance(a, ast.Starred) for a in n.args)
        for pname, pos in zip(names, positions):
            if pos < len(n.args) and not starred:
                ops.append(Operand(None, args[pos], n.args[pos], self.fa))
            else:
                for k in n.keywords:
                    if k.arg == pname:
                        ops.append(Operand(None, kwargs.get(pname, Val("unknown")), k.value, self.fa))
        short = sink.name.rsplit(".", 1)[-1]
        if not sink.args and sink.contract == "matmul":
            ops = [Operand(None, v, a, self.fa) for a, v in zip(n.args, args) if v.is_tensor or v.kind == "unknown"]
            if short == "einsum":
                eq, _ = self.einsum_parts(n, args)
                if eq is not None and not self.contracts(eq):
                    return  # a broadcast multiply: it promotes instead of raising
        kind = {"matmul": "matmul", "sdpa": "sdpa", "equal": "equal", "equal-dtypes": "equal",
                "half-only": "half-only", "equal-op": "equal-op"}.get(sink.contract)
        if kind == "equal-op":
            self.emit(kind, n, self.fa.seg(n.func), ops, autocast=sink.autocast)
        elif kind is not None:
            self.emit(kind, n, short, ops)

    def module_arg_sink(self, ref, n: ast.Call, w: Val, args: list[Val], kwargs: dict[str, Val]) -> None:
        """A module whose forward argument must have the dtype of one of its tensors (``nn.EmbeddingBag``'s
        ``per_sample_weights`` and its table), as the API table's ``module_sinks`` say."""
        spec = self.api.module_sinks.get(ref.cls[len("torch.nn."):]) if ref.cls.startswith("torch.nn.") else None
        if spec is None:
            return
        pos, name = spec["position"], spec["arg"]
        node = n.args[pos] if pos < len(n.args) and not any(isinstance(a, ast.Starred) for a in n.args) else \
            next((k.value for k in n.keywords if k.arg == name), None)
        if node is None:
            return
        v = args[pos] if pos < len(n.args) else kwargs.get(name, Val("unknown"))
        self.emit(spec["contract"], n, f"{ref.text}(...)", [Operand(f"{ref.text}.{spec['with']}", w, None),
                                                            Operand(None, v, node, self.fa)],
                  autocast=spec.get("autocast", ""))

    def strict_sink(self, n: ast.Call, ops: list[Operand], fname: str, params: tuple[str, ...], where: str) -> None:
        self.emit("strict", n, f"{fname}()", ops, callee=fname, params=params, where=where)

    def index_sink(self, n: ast.AST, sink: str, dest: Val, src: Val, dest_node, src_node, what: str,
                   raises: bool = True, lerp: bool = False) -> None:
        self.emit("index", n, sink, [Operand(None, dest, dest_node, self.fa),
                                     Operand(None if src_node is not None else "the assigned value", src, src_node,
                                             self.fa)],
                  what=what, raises=raises, lerp=lerp)

    def subscript_store(self, target: ast.Subscript, v: Val, env: dict[str, Val], value_node) -> None:
        """``x[idx] = v``: with a tensor index this is index_put_ (equal dtypes, even under autocast)."""
        dest = self.eval(target.value, env)
        idx = self.eval(target.slice, env)
        idx_items = idx.items if idx.kind == "tuple" else (idx,)
        advanced = any(i.kind in ("int", "bool") and not i.zdim for i in idx_items) or isinstance(target.slice, ast.List) \
            or self.is_mask_index(target.slice, env)
        if not advanced and dest.kind in ("low", "olp") and v.is_float:
            self.fa.fates.cast_back(v.prov)  # `x[:, :n] = v` copies v into the low-precision x
        if advanced:
            self.index_sink(target, f"{self.fa.seg(target)} = ...", dest, v, target.value, value_node,
                            "`x[idx] = v` with a tensor index is `index_put_`")

    def is_mask_index(self, node: ast.AST, env: dict[str, Val], depth: int = 0) -> bool:
        """``x[input_ids == image_token_id] = v``: an element-wise comparison of a tensor (a bool mask, so
        ``index_put_``), also combined with ``&``/``|``/``~`` or through a local assigned only such masks.
        Comparisons of known Python values (``x[i == 0]``) are not masks."""
        if depth > 4:
            return False
        if isinstance(node, ast.Compare):
            if not all(isinstance(op, (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
                return False
            sides = [node.left] + list(node.comparators)
            vals = [self.eval(x, env) for x in sides]
            if any(v.kind in ("str", "none", "dtype") for v in vals):
                return False
            return any(v.is_tensor or (v.kind == "unknown" and not self.python_annotated(x)) for x, v in zip(sides, vals))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            return self.is_mask_index(node.left, env, depth + 1) or self.is_mask_index(node.right, env, depth + 1)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return self.is_mask_index(node.operand, env, depth + 1)
        if isinstance(node, ast.Name):
            values = [a.value for a in ast.walk(self.fn) if isinstance(a, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == node.id for t in a.targets)]
            return bool(values) and all(self.is_mask_index(v, env, depth + 1) for v in values)
        return False

    def python_annotated(self, node: ast.AST) -> bool:
        """A parameter annotated as a Python scalar (``step: int``): never a tensor."""
        if not isinstance(node, ast.Name):
            return False
        args = getattr(self.fn, "args", None)
        for a in (list(args.posonlyargs) + list(args.args) + list(args.kwonlyargs)) if args else ():
            if a.arg == node.id and a.annotation is not None:
                text = ast.unparse(a.annotation)
                return "Tensor" not in text and any(t in text for t in ("int", "float", "bool", "str"))
        return False

    def fill_sink(self, op: str, recv: Val | None, args: list[Val], kwargs: dict[str, Val], n: ast.Call,
                  function: bool) -> None:
        """A fill/clamp whose scalar is converted to the destination's dtype with an overflow check."""
        if op == "full":
            target = self.explicit_dtype(kwargs)
            kind = target.const if target is not None else None
            value_nodes = n.args[1:2] + [k.value for k in n.keywords if k.arg == "fill_value"]
            dest_node = None
        else:
            kind = recv.kind if recv is not None else None
            if op == "full_like" and self.explicit_dtype(kwargs) is not None:
                kind = self.explicit_dtype(kwargs).const  # full_like(x, v, dtype=d) fills a d tensor
            pos = {"masked_fill": 1, "masked_fill_": 1, "fill_": 0, "full_like": 0, "clamp": 0, "clamp_min": 0,
                   "clamp_max": 0, "clip": 0, "clamp_": 0}[op]
            if function:
                pos += 1  # torch.masked_fill(x, mask, value): the receiver is the first argument
                dest_node = n.args[0] if n.args else None
            else:
                dest_node = n.func.value if isinstance(n.func, ast.Attribute) else None
            value_nodes = list(n.args[pos:pos + (2 if op in ("clamp", "clip", "clamp_") else 1)])
            value_nodes += [k.value for k in n.keywords if k.arg in ("value", "min", "max", "fill_value")]
        dest = Val(kind) if kind else Val("unknown")
        self.emit("fill", n, op, [Operand(None, Val("scalar"), v, self.fa) for v in value_nodes],
                  dest=dest, dest_node=dest_node, op=op)

    def return_sink(self, s: ast.Return, v: Val) -> None:
        """What a function returns (each tensor of a returned tuple), for rules on the dtype at a module
        boundary.  Emitted where a returned tensor is wider than the compute dtype, and in a caller's
        context wherever the returned dtypes are known (a caller passing float32 makes a float32 result fine)."""
        if not self.report or s.value is None or self.cls is None:
            return  # only a module's methods are boundaries (module-level functions are helpers)
        name = getattr(self.fn, "name", "")
        if name != "forward" and (not name or name.startswith("_")):
            return
        if self.ac or self.regime == "autocast":
            return  # under autocast the next autocast op casts its inputs again: no boundary question
        items = v.items if v.kind == "tuple" else (v,)
        nodes = s.value.elts if isinstance(s.value, ast.Tuple) and len(s.value.elts) == len(items) else None
        if nodes is None and v.kind == "tuple":
            return
        ops = [Operand(None, item, nodes[i] if nodes is not None else s.value, self.fa) for i, item in enumerate(items)]
        wide = any(o.val.kind in ("fp32", "fp64") and not o.val.zdim for o in ops)
        if not ops or not (wide or (self.depth > 0 and any(o.val.is_float for o in ops))):
            return
        self.emit("return", s.value, getattr(self.fn, "name", "lambda"), ops, fn=self.fn, cls=self.cls,
                  entry_low=self.entry_low, main=self.entry_main)

    def residual_check(self, n: ast.AST, a: Val, b: Val, ln, rn) -> bool:
        """A kept module's float32 output added to the low-precision residual stream (``y + f(y)``)."""
        for x, y, xn, yn in ((a, b, ln, rn), (b, a, rn, ln)):
            if x.kept and x.kind in ("fp32", "fp64") and not x.zdim and y.kind in ("low", "olp") and not y.zdim \
                    and self.is_residual(yn, xn):
                self.emit("residual", n, "+", [Operand(None, x, xn, self.fa), Operand(None, y, yn, self.fa)])
                return True
        return False

    def is_residual(self, yn: ast.AST | None, xn: ast.AST | None) -> bool:
        """``y + f(y)``: ``y`` is a variable and the other operand was computed from it in this function."""
        if not isinstance(yn, ast.Name) or xn is None:
            return False
        defs = self.fa.assignments(self.fn)
        seen: set[str] = set()
        todo = [n.id for n in ast.walk(xn) if isinstance(n, ast.Name)]
        while todo:
            name = todo.pop()
            if name == yn.id:
                return True
            if name in seen or len(seen) > 50:
                continue
            seen.add(name)
            for value in defs.get(name, ()):
                todo.extend(n.id for n in ast.walk(value) if isinstance(n, ast.Name))
        return False

    # -- float16 range: constants and sums that read fine but do not survive float16 (facts §3.1, §5) ------
    def constant_sink(self, n: ast.AST, op: str, pairs, dtype_node: ast.AST | None = None) -> None:
        """A constant beyond float16's range combined with a tensor where no overflow check runs
        (``torch.where``, ``+``/``-``/``*``, ``torch.tensor(c, dtype=...)``): ``pairs`` are
        (tensor value, tensor node, constant node) candidates; the first with a big constant is reported."""
        for t, t_node, c_node in pairs:
            if not t.is_float or c_node is None:
                continue
            value = numeric_constant(c_node, self.fa.names)
            if beyond_fp16(value):
                self.emit("constant", n, op, [Operand(None, t, t_node, self.fa),
                                              Operand(None, SCALAR, c_node, self.fa)], op=op, value=value,
                          dtype_node=dtype_node)
                return

    def eps_sink(self, op: str, v: Val, arg_node: ast.AST | None, n: ast.AST) -> None:
        """``x / (d + 1e-12)``, ``rsqrt(var + 1e-12)``, ``log(p.clamp(min=1e-10))``: the guarded value, its eps."""
        if not v.is_float or arg_node is None:
            return
        found = self.eps_term(arg_node, n.lineno, 0)
        if found is None:
            return
        eps_node, base_node, form, value, via = found
        self.emit("eps", n, op, [Operand(None, v, base_node, self.fa), Operand(None, SCALAR, eps_node, self.fa)],
                  op=op, form=form, value=value, via=via)

    def eps_term(self, node: ast.AST, before: int, depth: int):
        """(eps node, guarded node, "+"/"clamp", value, assignment or None) of an eps guard spelled in ``node``
        (or in the last assignment above ``before`` of the name ``node`` is)."""
        names = self.fa.names
        if isinstance(node, ast.Name) and depth == 0:
            defs = [d for d in self.fa.assignments(self.fn).get(node.id, ()) if d.lineno < before]
            if not defs:
                return None
            last = max(defs, key=lambda d: (d.lineno, d.col_offset))
            found = self.eps_term(last, before, 1)
            return None if found is None else found[:4] + (last,)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for c, base in ((node.right, node.left), (node.left, node.right)):
                value = numeric_constant(c, names)
                if below_fp16_normal(value):
                    return c, base, "+", value, None
            return None
        if isinstance(node, ast.Call):
            func = node.func
            method = isinstance(func, ast.Attribute) and func.attr in CLAMPS and names.qualify(func) is None
            q = names.qualify(func)
            function = q is not None and q.startswith("torch.") and q.rsplit(".", 1)[-1] in CLAMPS
            if not (method or function):
                return None
            base = func.value if method else (node.args[0] if node.args else None)
            pos = 0 if method else 1
            lows = [k.value for k in node.keywords if k.arg == "min"] + node.args[pos:pos + 1]
            for c in lows:
                value = numeric_constant(c, names)
                if below_fp16_normal(value):
                    return c, base, "clamp", value, None
        return None

    def reduction_sink(self, op: str, x: Val, recv_node: ast.AST | None, n: ast.Call) -> None:
        """``x.pow(2).mean()``, ``(x * x).sum()``, ``x.var()``: a sum of squares in the receiver's dtype."""
        if not x.is_float or recv_node is None:
            return
        if op in VARIANCES:
            self.emit("reduction", n, op, [Operand(None, x, recv_node, self.fa)], op=op, square=None, bases=(recv_node,))
            return
        square = self.square_of(recv_node, n.lineno)
        if square is not None:
            form, bases = square
            self.emit("reduction", n, op, [Operand(None, x, recv_node, self.fa)], op=op, square=form, bases=bases)

    def square_of(self, node: ast.AST, before: int, depth: int = 0):
        """("x.pow(2)" form, the squared expression(s)) when ``node`` squares a value (through one local name)."""
        names = self.fa.names
        if isinstance(node, ast.Name) and depth == 0:
            defs = [d for d in self.fa.assignments(self.fn).get(node.id, ()) if d.lineno < before]
            return self.square_of(max(defs, key=lambda d: (d.lineno, d.col_offset)), before, 1) if defs else None
        two = lambda c: numeric_constant(c, names) == 2.0  # noqa: E731
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow) and two(node.right):
                return "**", (node.left,)
            if isinstance(node.op, ast.Mult) and ast.dump(node.left) == ast.dump(node.right):
                return "*", (node.left, node.right)
            return None
        if isinstance(node, ast.Call):
            func = node.func
            q = names.qualify(func)
            if isinstance(func, ast.Attribute) and q is None:
                if func.attr == "pow" and len(node.args) == 1 and two(node.args[0]):
                    return ".pow", (func.value,)
                if func.attr == "square" and not node.args:
                    return ".square", (func.value,)
            if q == "torch.pow" and len(node.args) == 2 and two(node.args[1]):
                return "torch.pow", (node.args[0],)
            if q == "torch.square" and len(node.args) == 1:
                return "torch.square", (node.args[0],)
        return None

    def narrowing_cast(self, r: Val, n: ast.Call) -> None:
        """``mask.to(scores.dtype)`` of a float32 tensor filled with a constant beyond float16's range
        (``torch.full(..., -1e9)``, ``(1 - m) * -1e9``, ``torch.where(m, 0.0, -1e9)``) a few lines above."""
        if not isinstance(n.func, ast.Attribute):
            return
        found = self.big_constant_in(n.func.value, n.lineno, 0)
        if found is not None:
            c_node, via = found
            self.emit("constant", n, ".to", [Operand(None, r, None, self.fa), Operand(None, SCALAR, c_node, self.fa)],
                      op=".to", value=numeric_constant(c_node, self.fa.names), dtype_node=None, via=via)

    def big_constant_in(self, node: ast.AST, before: int, depth: int):
        """(constant node, assignment or None) of a constant beyond float16's range that fills ``node``:
        an argument of ``torch.full``/``where``/``masked_fill``, an operand of ``+ - *``, through views
        and one local name."""
        names = self.fa.names
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("triu", "tril", "unsqueeze", "expand", "view", "reshape", "contiguous", "clone"):
            node = node.func.value
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name) and depth == 0:
            defs = [d for d in self.fa.assignments(self.fn).get(node.id, ()) if d.lineno < before]
            if not defs:
                return None
            last = max(defs, key=lambda d: (d.lineno, d.col_offset))
            found = self.big_constant_in(last, before, 1)
            return None if found is None else (found[0], last)
        candidates: list = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            candidates = [node.left, node.right]
            for side in (node.left, node.right):
                if isinstance(side, ast.BinOp):
                    candidates += [side.left, side.right]
        elif isinstance(node, ast.Call):
            q = names.qualify(node.func) or ""
            short = q.rsplit(".", 1)[-1] if q.startswith("torch.") else \
                (node.func.attr if isinstance(node.func, ast.Attribute) else "")
            if short in ("full", "full_like", "where", "masked_fill", "new_full"):
                candidates = list(node.args) + [k.value for k in node.keywords if k.arg in ("fill_value", "value")]
        for c in candidates:
            if beyond_fp16(numeric_constant(c, names)):
                return c, None
        return None

    def promote_sink(self, res: Val, inputs: list[Val], nodes, n: ast.AST, what: str, message: str) -> Val:
        """An elementwise op promoting a low-precision activation to float32 (``x * torch.ones(d)``,
        ``q * cos``): the result carries a ``promoted`` step (its fate is recorded in ``fa.fates``) and
        a ``promote`` event names the float32 operand, whose provenance says where it came from.
        Low-precision parameters and buffers (``freqs * self.inv_freq``) are not activations."""
        nodes = list(nodes) if nodes and len(nodes) == len(inputs) else [None] * len(inputs)
        wide = [(v, nd) for v, nd in zip(inputs, nodes) if v.kind == res.kind and not v.zdim]
        if any(self.maybe_zero_dim(nd) for _, nd in wide):
            wide = []  # `kernel[1]` may be 0-dim (then it does not promote): no claim
        acts = [(v, nd) for v, nd in zip(inputs, nodes) if v.is_float and not v.zdim and v.kind in ("low", "olp")
                and nd is not None and not self.attr_rooted(nd)]
        step = self.fa.step(n, message, "promote", origin="promoted" if acts else "")
        res = res.with_step(step)
        if acts and wide:
            event = self.emit("promote", n, what, [Operand(None, v, nd, self.fa) for v, nd in wide + acts],
                              step=step, wide=len(wide))
            if event is not None:
                self.fa.fates.add_event(step, event)
        return res

    @staticmethod
    def maybe_zero_dim(node) -> bool:
        """An integer-indexed tensor (``t[0]``, ``t[i, j]``) is 0-dim when the index covers every dim."""
        if not isinstance(node, ast.Subscript):
            return False
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]

        def integer_like(p) -> bool:  # not a slice, `None`, `...` or a non-int constant
            if isinstance(p, ast.Constant):
                return isinstance(p.value, int) and not isinstance(p.value, bool)
            return not isinstance(p, ast.Slice)

        return all(integer_like(p) for p in parts)
