"""Sinks: where the interpreter emits ``SinkEvent``s for the rules.

The interpreter reports what reached an op with a dtype contract; the rules in
``dtypelint.rules`` judge it.  Two dtype facts stay here because interpretation itself
depends on them: after an equal-dtype sink the analysis continues in the lower
precision (as if fixed, ``CallMixin.after_sink``), and a kept module's float32 output
added to the residual continues in the residual's dtype.
"""

from __future__ import annotations

import ast

from dtypelint.analysis.events import Operand, Scope, SinkEvent
from dtypelint.analysis.lattice import Val


# events of ops with a dtype contract (and DTL104's residual add): a promoted value reaching one is that event's finding
SINK_KINDS = frozenset({"matmul", "sdpa", "equal", "half-only", "strict", "index", "residual"})


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
        worth = len(kinds) > 1 or kind in ("residual", "fill") or (kind == "half-only" and kinds & {"fp32", "fp64"})
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
                "half-only": "half-only"}.get(sink.contract)
        if kind is not None:
            self.emit(kind, n, short, ops)

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
        advanced = any(i.kind in ("int", "bool") and not i.zdim for i in idx_items) or isinstance(target.slice, ast.List)
        if not advanced and dest.kind in ("low", "olp") and v.is_float:
            self.fa.fates.cast_back(v.prov)  # `x[:, :n] = v` copies v into the low-precision x
        if advanced:
            self.index_sink(target, f"{self.fa.seg(target)} = ...", dest, v, target.value, value_node,
                            "`x[idx] = v` with a tensor index is `index_put_`")

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
            pos = {"masked_fill": 1, "masked_fill_": 1, "fill_": 0, "full_like": 1, "clamp": 0, "clamp_min": 0,
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
        step = self.fa.step(n, message, "promoted" if acts else "")
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
