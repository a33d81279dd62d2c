"""Torch ops: the dtype transfer functions of ``torch_api.toml`` (facts §1-§2).

Casts, factories (which infer their dtype from their data: ``torch.tensor([0])`` is
int64), ``*_like``/``new_*``, the CUDA autocast policies (lower precision, fp32,
fp32-unless-``dtype=``, promote), ordinary promotion for binary ops, and ops that keep
the dtype of their source (``gather``, ``index_select``, views: the receiver or first
argument, never an index).  Sinks met on the way are reported through ``sinks.py``.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from dtypelint.analysis.interp.sinks import EPS_CONSUMERS, SQUARE_REDUCERS, VARIANCES
from dtypelint.analysis.fates import last_origin
from dtypelint.analysis.interp.values import CAST_UNKNOWN, SHAPE, is_cast_unknown
from dtypelint.analysis.lattice import NONE, SCALAR, UNKNOWN, Val, dtype_name, dtype_val, promote, tensor

# default-dtype factories whose fix is `dtype=` (not arange: `arange(...).float()` is deliberate)
ALLOC_FIX = frozenset({"zeros", "ones", "empty", "full", "randn", "rand"})
# fill/clamp ops whose scalar argument is converted to the tensor's dtype with an overflow check
OVERFLOW_OPS = frozenset({"masked_fill", "masked_fill_", "fill_", "full", "full_like", "clamp", "clamp_", "clamp_min",
                          "clamp_max", "clip"})
INDEX_FAMILY = {
    # method: (index of the source argument, raises under autocast?)
    "index_put_": (1, True), "index_put": (1, False), "index_copy_": (2, True), "index_copy": (2, True),
    "index_add_": (2, True), "index_add": (2, True), "scatter_": (2, True), "scatter": (2, True),
    "scatter_add_": (2, True), "scatter_add": (2, False), "masked_scatter_": (1, True),
    "masked_scatter": (1, True), "lerp_": (0, True), "lerp": (0, True),
}
# ops where the float16 range rules look at the operand: eps guards, sums of squares, constant tensors
FP16_RANGE_OPS = EPS_CONSUMERS | SQUARE_REDUCERS | VARIANCES | {"tensor", "as_tensor", "new_tensor"}
CLAMPS = frozenset({"clamp", "clamp_min", "clamp_max", "clip"})
SOFTMAXES = frozenset({"softmax", "log_softmax"})
TRIG = frozenset({"cos", "sin"})
REDUCTIONS = ("mean", "max", "min", "amax", "amin", "std", "var", "norm")


def cast_origin(x: Val) -> str:
    """An explicit cast to float32 of integer positions starts a table (``torch.arange(T).float()``);
    of a low-precision activation, an upcast."""
    if x.kind == "int" and not x.zdim:
        return "table"
    if x.kind in ("low", "olp") and not x.zdim:
        return "upcast"
    return ""


class OpsMixin:
    index_family = INDEX_FAMILY

    def explicit_dtype(self, kwargs: dict[str, Val]) -> Val | None:
        d = kwargs.get("dtype")
        if d is not None and d.kind == "dtype":
            return d
        return None

    def apply_op(self, op: str, recv: Val | None, args: list[Val], kwargs: dict[str, Val], n: ast.Call,
                 opname: str, function: bool) -> Val:
        r = self._apply_op(op, recv, args, kwargs, n, opname, function)
        if op in ("to", "type", "type_as") or op in self.api.casts:
            if r.kind in ("low", "olp") and recv is not None and recv.kind in ("fp32", "fp64") and not function:
                self.narrowing_cast(r, n)
            if recv is not None and recv.is_float and not (r.is_float and r.kind in ("fp32", "fp64")):
                self.fa.fates.cast_back(recv.prov)  # cast back to the low precision (or to an unseen dtype)
            return r
        if op == "copy_" and recv is not None and recv.kind in ("low", "olp") and args:
            self.fa.fates.cast_back(args[0].prov)  # written into a low-precision tensor
        if op in TRIG and r.kind in ("fp32", "fp64") and not r.zdim and last_origin(r.prov) not in ("upcast", "table"):
            # `emb.cos()` / `torch.sin(t[:, None] * freqs)` of a non-activation: a rotary / sinusoidal table
            r = r.with_step(self.fa.step(n, f"`{self.fa.seg(n)}` is a {dtype_name(r.kind, self.fa.compute)} "
                                            f"position table", origin="table"))
        if op in SOFTMAXES and r.kind in ("fp32", "fp64") and not r.zdim and "dtype" not in kwargs:
            src = recv if recv is not None else (args[0] if args else UNKNOWN)
            if src.kind == r.kind and last_origin(src.prov) == "upcast":
                dn = dtype_name(r.kind, self.fa.compute)
                r = r.with_step(self.fa.step(n, f"`{opname}` of the upcast input is {dn}", origin="softmax"))
        return self.keep_cast_marker(r, [recv] + list(args) + list(kwargs.values()))

    def _apply_op(self, op: str, recv: Val | None, args: list[Val], kwargs: dict[str, Val], n: ast.Call,
                  opname: str, function: bool) -> Val:
        api = self.api
        x = recv if recv is not None else UNKNOWN
        if op in OVERFLOW_OPS:
            self.fill_sink(op, x if not function or op != "full" else None, args, kwargs, n, function)
        if op in FP16_RANGE_OPS:
            self.fp16_range_events(op, x, kwargs, n, function)
        if op in INDEX_FAMILY and not function and isinstance(n.func, ast.Attribute):
            return self.index_op(op, x, args, kwargs, n)
        if op in api.casts:
            return self.cast_op(op, x, n)
        if op in ("to", "type"):
            return self.to_op(op, x, args, kwargs, n)
        if op == "type_as":
            t = args[0] if args else UNKNOWN
            if t.is_tensor:
                if t.kind in ("fp32", "fp64") and x.kind != t.kind:
                    return tensor(t.kind, t.prov + (self.fa.step(n, f"`{self.fa.seg(n)}` casts to {dtype_name(t.kind, self.fa.compute)}", "cast"),), zdim=x.zdim)
                return replace(t, zdim=x.zdim)
            return CAST_UNKNOWN
        ed = self.explicit_dtype(kwargs)
        if op in api.default_float or op in api.arange_like:
            return self.factory_op(op, recv, args, kwargs, n, function, ed)
        if op in api.like:
            if ed is not None:
                return tensor(ed.const) if ed.const else UNKNOWN
            return x if x.is_tensor else UNKNOWN
        if op in api.new:
            if ed is not None:
                return tensor(ed.const) if ed.const else UNKNOWN
            return replace(x, zdim=False) if x.is_tensor else UNKNOWN
        if op in api.integer:
            return tensor("int")
        if op in api.boolean:
            return tensor("bool")
        if op == "embedding":  # F.embedding(ids, weight): the table's rows
            w = args[0] if args else kwargs.get("weight", UNKNOWN)
            return w if w.is_tensor else UNKNOWN
        if op == "einsum":
            return self.einsum_op(n, args if recv is None else [recv] + list(args), opname)
        # explicit dtype= wins (softmax(..., dtype=torch.float32), sum(dtype=...))
        if ed is not None and ed.const:
            if ed.const in ("fp32", "fp64"):
                return tensor(ed.const, (self.fa.step(n, f"`{self.fa.seg(n.func)}(..., dtype={dtype_name(ed.const, self.fa.compute)})` returns {dtype_name(ed.const, self.fa.compute)}", "cast",
                                                      origin="softmax" if op in SOFTMAXES else ""),))
            return tensor(ed.const)
        if kwargs.get("dtype", NONE).kind != "none":
            return CAST_UNKNOWN  # `dtype=` a dtype the analysis does not know (`dtype=saved_dtype`): the author chose it
        all_in = ([recv] if recv is not None else []) + list(args)
        if self.ac:
            r = self.autocast_op(op, x, all_in, n, opname, function)
            if r is not None:
                return r
        if op in api.ac_fp32_opt or op in REDUCTIONS:
            if x.is_tensor and self.reduces_all(n, function) and op not in ("softmax", "log_softmax", "cumsum", "cumprod"):
                return replace(x, zdim=True)
        if op in api.values_indices:
            if not x.is_tensor:
                return UNKNOWN
            if self.reduces_all(n, function):
                return replace(x, zdim=True)
            return Val("tuple", items=(x, tensor("int")))
        if op in api.split:
            if not x.is_tensor and not is_cast_unknown(x):
                return UNKNOWN
            return Val("seq", ref=x)
        if op in api.binary:
            return self.binary_op(op, all_in, n, opname, function)
        if op in api.ac_promote or op in ("maximum", "minimum"):
            res, _ = promote([v for v in all_in if v.is_tensor])
            if res is not None:
                return self.promotion_step(res, all_in, n, opname, self.operand_nodes(n, function, all_in))
            return x if x.is_tensor else UNKNOWN
        if op in CLAMPS and not op.endswith("_"):
            # a dim>=1 tensor bound takes part in type promotion: `h.clamp(min=fp32_tensor)` is float32 (facts §2.1)
            given = list(zip(args, n.args[1 if function else 0:])) + [
                (kwargs[k.arg], k.value) for k in n.keywords if k.arg in ("min", "max") and k.arg in kwargs]
            bounds = [(v, nd) for v, nd in given if v.is_tensor and not v.zdim]
            if bounds and x.is_tensor:
                res, _ = promote([x] + [v for v, _ in bounds])
                recv = n.args[0] if function and n.args else (n.func.value if isinstance(n.func, ast.Attribute) else None)
                return self.promotion_step(res, [x] + [v for v, _ in bounds], n, opname,
                                           [recv] + [nd for _, nd in bounds]) if res is not None else UNKNOWN
        if op in api.keep or op in api.ac_lp or op in api.ac_fp32 or op in api.ac_fp32_opt:
            # the op keeps the dtype of its source: the receiver / first argument (not an index)
            return x if (x.is_tensor or is_cast_unknown(x)) else UNKNOWN
        if op in ("item", "tolist", "numel", "dim", "element_size", "nelement"):
            return SCALAR
        if op == "size":
            return SHAPE if not args and not kwargs else SCALAR
        return UNKNOWN

    def fp16_range_events(self, op: str, x: Val, kwargs: dict[str, Val], n: ast.Call, function: bool) -> None:
        """The operand of an eps consumer or a reduction, or the data of ``torch.tensor(c, dtype=...)``."""
        recv_node = (n.args[0] if n.args else None) if function else \
            (n.func.value if isinstance(n.func, ast.Attribute) else None)
        if op in EPS_CONSUMERS:
            self.eps_sink(op, x, recv_node, n)
        elif op in SQUARE_REDUCERS or op in VARIANCES:
            self.reduction_sink(op, x, recv_node, n)
        else:
            data = n.args[0] if n.args else None
            ed = self.explicit_dtype(kwargs)
            kind = ed.const if ed is not None else (x.kind if op == "new_tensor" else None)
            if kind and data is not None:
                dtype_node = next((k.value for k in n.keywords if k.arg == "dtype"), None)
                if dtype_node is None and op == "new_tensor" and isinstance(n.func, ast.Attribute):
                    dtype_node = ast.Attribute(value=n.func.value, attr="dtype", ctx=ast.Load())
                self.constant_sink(n, f"{self.fa.seg(n.func)}", [(Val(kind), None, data)], dtype_node)

    # -- casts ------------------------------------------------------------------------------
    def cast_op(self, op: str, x: Val, n: ast.Call) -> Val:
        c = self.api.casts[op]
        kind = self.dtype_kind(c) if c in ("float16", "bfloat16") else c
        if kind in ("fp32", "fp64"):
            return tensor(kind, x.prov + (self.fa.step(n, f"`{self.fa.seg(n.func)}()` casts to {dtype_name(kind, self.fa.compute)}", "cast",
                                                       origin=cast_origin(x)),), zdim=x.zdim)
        return tensor(kind, zdim=x.zdim)

    def to_op(self, op: str, x: Val, args: list[Val], kwargs: dict[str, Val], n: ast.Call) -> Val:
        fa = self.fa
        target = None
        for v in list(args) + [kwargs.get("dtype", UNKNOWN)]:
            if v.kind == "dtype":
                target = v
                break
            if v.is_tensor and op == "to":
                target = replace(dtype_val(v.kind, v.prov), hint=v.hint)
                break
        if target is None:
            if "dtype" in kwargs:
                return CAST_UNKNOWN
            # anything but a device string or None may be a dtype we cannot see (a module's `dtype` property)
            if any(v.kind not in ("str", "none", "pybool", "scalar") for v in args) and "device" not in kwargs and args:
                # `.to(something)`: could be a dtype we cannot see
                a0 = n.args[0] if n.args else None
                if a0 is not None and isinstance(a0, ast.Attribute) and a0.attr == "device":
                    return x
                return CAST_UNKNOWN if not (a0 is not None and "device" in fa.seg(a0)) else x
            return x
        if target.const is None:
            return CAST_UNKNOWN
        kind = target.const
        if kind in ("fp32", "fp64"):
            if x.kind == kind:
                return x
            return tensor(kind, target.prov + (fa.step(n, f"`{fa.seg(n)}` casts to {dtype_name(kind, fa.compute)}", "cast",
                                                       origin=cast_origin(x)),),
                          zdim=x.zdim, kept=target.kept, hint=target.hint)
        return tensor(kind, zdim=x.zdim)

    # -- factories --------------------------------------------------------------------------
    def factory_op(self, op: str, recv: Val | None, args: list[Val], kwargs: dict[str, Val], n: ast.Call,
                   function: bool, ed: Val | None) -> Val:
        fa = self.fa
        cd = fa.compute
        if ed is not None:
            if ed.const in ("fp32", "fp64"):
                return tensor(ed.const, ed.prov + (fa.step(n, f"`{fa.seg(n.func)}(..., dtype={dtype_name(ed.const, cd)})` allocates {dtype_name(ed.const, cd)}", "cast",
                                                           origin="table" if op in self.api.arange_like else ""),))
            return tensor(ed.const) if ed.const else UNKNOWN
        if "dtype" in kwargs:
            return UNKNOWN
        ins = ([recv] if recv is not None else []) + list(args)
        if op == "tensor" or op == "as_tensor":
            return self.tensor_from_data(ins[0] if ins else UNKNOWN, n)
        if op in self.api.arange_like or op == "full":
            vals = ins[1:2] if op == "full" else ins
            if op == "full" and not vals:
                vals = [kwargs.get("fill_value", UNKNOWN)]
            kinds = self.data_kind(vals)
            empty = op == "full" and self.is_empty_shape(n)  # `torch.full((), n)`: 0-dim
            if kinds == "int":
                return tensor("int", zdim=empty)
            if kinds == "bool":
                return tensor("bool", zdim=empty)
            if kinds is None and op == "full":
                return UNKNOWN
            if kinds is None and op in self.api.arange_like:
                return tensor("int")  # sizes the analysis cannot see are Python ints in practice
        zd = op in ("zeros", "ones", "empty", "full", "rand", "randn") and self.is_empty_shape(n)
        hint = None
        if op in ALLOC_FIX and function and not zd and n.args and "dtype" not in kwargs:
            cands = self.dtype_in_scope("low")
            if cands:
                hint = ("alloc", n, tuple(cands), id(fa))
        return tensor("fp32", (fa.step(n, f"`{fa.seg(n.func)}(...)` without `dtype=` allocates float32 (the default dtype)",
                                       origin="factory"),), zdim=zd, hint=hint)

    @staticmethod
    def data_kind(vals: list[Val]) -> str | None:
        """"float" / "int" / "bool" of Python data (None when some value is not a known number)."""
        flat: list[Val] = []
        for v in vals:
            if v.kind == "tuple":
                flat.extend(v.items)
            else:
                flat.append(v)
        if not flat:
            return "float"
        if any(v.kind == "scalar" and v.scalar_float for v in flat):
            return "float"
        if all(v.kind == "pybool" for v in flat):
            return "bool"
        if all(v.kind in ("scalar", "shape") or (v.kind == "tuple") for v in flat):
            return "int"
        return None

    def tensor_from_data(self, v0: Val, n: ast.Call) -> Val:
        """``torch.tensor(data)`` infers its dtype from the data: ints -> int64, floats -> float32."""
        if v0.is_tensor:
            return v0
        zd = v0.kind in ("scalar", "pybool")
        kind = self.data_kind([v0]) if v0.kind in ("scalar", "pybool", "tuple") else None
        if kind == "int":
            return tensor("int", zdim=zd)
        if kind == "bool":
            return tensor("bool", zdim=zd)
        if kind is None and v0.kind not in ("seq",):
            return UNKNOWN
        # a factory for the promotion rules only when the data is known to be floats (a list built from
        # values the analysis cannot see may hold image sizes: int64)
        return tensor("fp32", (self.fa.step(n, f"`{self.fa.seg(n.func)}(...)` without `dtype=` creates a float32 tensor (the default dtype)",
                                            origin="factory" if kind == "float" else ""),), zdim=zd)

    @staticmethod
    def is_empty_shape(n: ast.Call) -> bool:
        """``torch.zeros(())`` / ``torch.full((), v)``: a 0-dim tensor (never promotes)."""
        shape = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "size"), None)
        return isinstance(shape, (ast.Tuple, ast.List)) and not shape.elts

    @staticmethod
    def reduces_all(n: ast.Call, function: bool) -> bool:
        extra = len(n.args) - (1 if function else 0)
        return extra <= 0 and not any(k.arg in ("dim", "axis") for k in n.keywords)

    # -- autocast, promotion ------------------------------------------------------------------
    def autocast_op(self, op: str, x: Val, all_in: list[Val], n: ast.Call, opname: str, function: bool) -> Val | None:
        api = self.api
        if op in api.ac_lp:
            for v in all_in:
                if v.is_float:
                    self.fa.fates.cast_back(v.prov)  # autocast casts its inputs to the low precision
            return tensor("low") if x.is_float or x.kind == "unknown" else x
        if op in api.ac_fp32 or op in api.ac_fp32_opt:
            if x.is_float and x.kind != "fp64":
                zd = x.zdim or (op in api.ac_fp32_opt and self.reduces_all(n, function))
                return tensor("fp32", x.prov + (self.fa.step(n, f"`{opname}` runs in float32 under CUDA autocast"),), zdim=zd)
            return x if x.is_tensor else UNKNOWN
        if op in api.ac_promote:
            res, _ = promote([v for v in all_in if v.is_tensor])
            if res is None:
                return UNKNOWN
            if res.kind in ("fp32", "fp64") and any(v.kind in ("low", "olp") for v in all_in if v.is_tensor and not v.zdim):
                nodes = self.operand_nodes(n, function, all_in)
                res = self.operand_hint(res, all_in, nodes)
                return self.promote_sink(res, all_in, nodes, n, opname,
                                         f"`{opname}` is an autocast \"promote\" op: it runs in the widest input dtype, float32")
            return res
        return None

    def binary_op(self, op: str, all_in: list[Val], n: ast.Call, opname: str, function: bool) -> Val:
        ins = []
        for v in all_in:
            if v.kind == "tuple":
                ins.extend(v.items)
            elif v.kind == "seq":
                ins.append(v.ref if isinstance(v.ref, Val) else UNKNOWN)
            else:
                ins.append(v)
        nodes = self.operand_nodes(n, function, ins)
        if op == "where" and len(ins) == 3 and len(nodes) == 3:
            # torch.where(cond, x, y): whatever the analysis assumed for `cond`, `x`/`y` carry the dtype
            self.constant_sink(n, opname, [(ins[1], nodes[1], nodes[2]), (ins[2], nodes[2], nodes[1])])
        if op == "where" and ins and ins[0].kind in ("bool", "unknown") and len(ins) == 3:
            ins = ins[1:]
            nodes = nodes[1:]
        res, _ = promote(ins)
        if res is None:
            wide = self.wide_despite_unknown(ins, nodes)
            if wide is not None:
                return wide
            return CAST_UNKNOWN if any(is_cast_unknown(v) for v in ins) else UNKNOWN
        return self.promotion_step(res, ins, n, opname, nodes)

    def einsum_op(self, n: ast.Call, args: list[Val], opname: str) -> Val:
        """``einsum`` with a contracted index is a matmul (a sink); without one it is a broadcast
        multiply, which promotes like ``*`` (facts §3: only contractions raise)."""
        eq, tensors = self.einsum_parts(n, args)
        if eq is not None and not self.contracts(eq):
            return self.binary_op("mul", tensors, n, opname, True)
        nodes = [a for a in n.args if not (isinstance(a, ast.Constant) and isinstance(a.value, str))]
        if len(nodes) == 1 and isinstance(nodes[0], (ast.List, ast.Tuple)):
            nodes = list(nodes[0].elts)
        if len(nodes) == len(tensors):
            self.matmul_sink(n, [self.operand(nd, v) for nd, v in zip(nodes, tensors)
                                 if v.is_tensor or v.kind == "unknown"], opname.rsplit(".", 1)[-1])
        if self.ac:
            return tensor("low") if any(v.is_float or v.kind == "unknown" for v in tensors) else UNKNOWN
        return self.after_sink([v for v in tensors if v.is_tensor or v.kind == "unknown"])

    def einsum_parts(self, n: ast.Call, args: list[Val]) -> tuple[str | None, list[Val]]:
        strs = [v for v in args if v.kind == "str"]
        tensors = [v for v in args if v.kind != "str"]
        if len(tensors) == 1 and tensors[0].kind == "tuple":
            tensors = list(tensors[0].items)
        return (strs[0].const if strs else None), tensors

    @staticmethod
    def contracts(eq: str) -> bool:
        """True when some index of the inputs is summed away (``bhid,bhjd->bhij``: d)."""
        if "->" not in eq:
            return True  # implicit output: repeated indices are summed
        lhs, rhs = eq.split("->", 1)
        if " " in eq or any(len(p.strip()) > 1 and "," not in eq for p in [lhs]):
            # einops style: space-separated axis names
            ins = {a for part in lhs.split(",") for a in part.replace("(", " ").replace(")", " ").split()}
            outs = set(rhs.replace("(", " ").replace(")", " ").split())
        else:
            ins = {c for c in lhs if c.isalpha()}
            outs = {c for c in rhs if c.isalpha()}
        return bool(ins - outs)

    def operand_nodes(self, n: ast.Call, function: bool, vals: list[Val]) -> list:
        """The AST nodes of ``[recv] + args`` of a call, with tuple/list arguments flattened like ``vals``."""
        nodes: list = []
        if not function and isinstance(n.func, ast.Attribute):
            nodes.append(n.func.value)
        nodes.extend(n.args)
        out: list = []
        for nd in nodes:
            if isinstance(nd, (ast.Tuple, ast.List)):
                out.extend(nd.elts)
            elif isinstance(nd, ast.Starred):
                out.append(None)
            else:
                out.append(nd)
        return out if len(out) == len(vals) else []

    # -- index family -----------------------------------------------------------------------
    def index_op(self, op: str, x: Val, args: list[Val], kwargs: dict[str, Val], n: ast.Call) -> Val:
        src_i, raises_under_ac = INDEX_FAMILY[op]
        names = ("source", "src", "values", "end")
        src = args[src_i] if src_i < len(args) else next((kwargs[k] for k in names if k in kwargs), UNKNOWN)
        src_node = n.args[src_i] if src_i < len(n.args) else next((k.value for k in n.keywords if k.arg in names), None)
        self.index_sink(n, f"{self.fa.seg(n.func)}(...)", x, src, n.func.value, src_node, f"`{op}`",
                        raises=raises_under_ac or not self.ac, lerp=op.startswith("lerp"))
        if op.endswith("_"):
            return x
        if self.ac and op in ("index_put", "scatter_add"):
            res, _ = promote([x, src])
            return res or x
        return x
