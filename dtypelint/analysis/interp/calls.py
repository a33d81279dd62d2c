"""Calls: builtins, torch functions, project functions (this file or another), methods, callables.

A project function is interpreted with the call's own abstract arguments (each
parameter bound to its argument's dtype), in the file that defines it: a helper in
another file is found through the project index, or on disk when the file is linted
alone.  What the callee returns on its different paths comes back as alternatives
(``Frame.choose``).  A callee that asserts equal dtypes of some parameters — directly or
by passing them on to such a callee — is a dtype-strict sink at the call.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import replace

from dtypelint.analysis.interp.file import carries_data, makes_tensors
from dtypelint.analysis.interp.values import CAST_UNKNOWN, SHAPE, FuncRef, floating_truth, is_cast_unknown
from dtypelint.analysis.lattice import NONE, SCALAR, UNKNOWN, Val, dtype_name, join, promote
from dtypelint.analysis.paths import Clause, signature

MAX_DEPTH = 5
CALL_BUDGET = 25_000  # statements one entry function may evaluate before its callees are no longer entered
SCALAR_FUNCS = frozenset({"math.sqrt", "math.log", "math.exp", "math.pow", "math.ceil", "math.floor", "math.prod",
                          "math.log2", "math.log10", "math.cos", "math.sin", "math.pi", "math.inf", "math.e"})
SCALAR_BUILTINS = frozenset({"int", "float", "len", "round", "abs", "min", "max", "sum", "pow", "divmod"})
PARTIALS = frozenset({"functools.partial"})


def is_static(fn) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in getattr(fn, "decorator_list", ()))


class CallMixin:
    # -- entry --------------------------------------------------------------------------
    def e_Call(self, n: ast.Call, env) -> Val:
        self.cur_env = env
        args: list[Val] = []
        for a in n.args:
            v = self.eval(a, env)
            if isinstance(a, ast.Starred) and v.kind == "tuple":
                args.extend(v.items)
            else:
                args.append(v)
        kwargs = {k.arg: self.eval(k.value, env) for k in n.keywords if k.arg}
        for k in n.keywords:
            if not k.arg:
                self.eval(k.value, env)
        self.cur_env = env
        f = n.func
        if isinstance(f, ast.Name) and f.id not in env and f.id not in self.fa.functions:
            r = self.builtin(f.id, n, args, kwargs, env)
            if r is not None:
                return r
        q = self.qualify(f, env)
        if q:
            return self.call_qualified(q, n, args, kwargs, env)
        if isinstance(f, ast.Attribute):
            recv = self.eval(f.value, env)
            if recv.kind in ("tuple", "seq") and f.attr in ("append", "extend", "insert") and args:
                self.grow_list(f.value, recv, f.attr, args, env)
                return NONE
            return self.call_method(recv, f.attr, n, args, kwargs, env)
        return self.call_value(self.eval(f, env), n, args, kwargs)

    def call_value(self, fv: Val, n: ast.Call, args: list[Val], kwargs: dict[str, Val], direct: bool = True) -> Val:
        """Call a value; ``direct`` is False when ``n`` is not a call of it (``map(f, xs)``, ``checkpoint(f, x)``)."""
        if fv.kind == "func":
            if fv.ref.cls is not None and not isinstance(fv.ref.node, ast.Lambda) and not is_static(fv.ref.node):
                return self.call_bound(fv.ref, n, args, kwargs, direct)  # `map(self.split_heads, ...)`: a bound method
            return self.call_function(fv.ref.node, fv.ref.cls, n, args, kwargs, recv_self=None, fa=fv.ref.fa,
                                      ref=fv.ref, direct=direct)
        if fv.kind == "module":
            return self.call_module(fv.ref, n, args, kwargs)
        if fv.kind == "qname":
            return self.call_qualified(fv.const, n, args, kwargs, self.cur_env)
        if fv.kind == "modclass":
            return Val("module", ref=fv.ref)  # an activation class chosen at run time, instantiated
        return UNKNOWN

    def grow_list(self, target: ast.AST, recv: Val, meth: str, args: list[Val], env) -> None:
        """``outs.append(t)``: the list becomes a sequence of its joined items."""
        key = target.id if isinstance(target, ast.Name) else (self.attr_key(target) if isinstance(target, ast.Attribute) else None)
        if key is None:
            return
        new = args[-1]
        if meth == "extend":
            new = self.element(new)
        items = list(recv.items) if recv.kind == "tuple" else ([recv.ref] if isinstance(recv.ref, Val) else [])
        elem = None
        for v in items + [new]:
            elem = v if elem is None else join(elem, v)
        env[key] = Val("seq", ref=elem)

    def builtin(self, name: str, n: ast.Call, args: list[Val], kwargs: dict[str, Val], env) -> Val | None:
        if name in SCALAR_BUILTINS:
            if all(v.kind in ("scalar", "shape", "pybool") for v in args) or name in ("int", "float", "len", "round"):
                return Val("scalar", scalar_float=name == "float")
            return None
        starred = any(isinstance(a, ast.Starred) for a in n.args)
        if name in ("enumerate", "zip", "reversed", "list", "tuple", "iter", "sorted") and args and not starred:
            if name in ("list", "tuple", "reversed", "iter", "sorted"):
                v = args[0]
                if v.kind == "tuple" and name != "sorted":
                    return Val("tuple", items=tuple(reversed(v.items)) if name == "reversed" else v.items)
                return Val("seq", ref=self.element(v))
            if name == "enumerate":
                return Val("seq", ref=Val("tuple", items=(SCALAR, self.element(args[0]))))
            if all(v.kind == "tuple" for v in args) and len({len(v.items) for v in args}) == 1:
                # zip of known tuples: a tuple of tuples, one per position
                return Val("tuple", items=tuple(Val("tuple", items=t) for t in zip(*(v.items for v in args))))
            return Val("seq", ref=Val("tuple", items=tuple(self.element(v) for v in args)))
        if name == "map" and len(args) >= 2 and not starred:
            return self.map_call(n, args[0], args[1:])
        if name == "isinstance" and len(n.args) == 2:
            t = self.qualify(n.args[1], env)
            if args[0].is_tensor and t in ("torch.Tensor", "torch.nn.Parameter"):
                return Val("pybool", const=True)
            return Val("pybool", const=None)
        if name == "next" and args and not starred:
            return self.element(args[0])
        if name == "super" and not args:
            return Val("super")
        if name == "getattr" and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) \
                and isinstance(n.args[1].value, str):
            obj = n.args[0]
            if isinstance(obj, ast.Name):
                return self.eval(ast.copy_location(ast.Attribute(value=obj, attr=n.args[1].value, ctx=ast.Load()), n), env)
            return None
        return None

    def map_call(self, n: ast.Call, fv: Val, iterables: list[Val]) -> Val:
        """``map(f, (q, k, v))``: ``f`` applied to each item, each keeping its own dtype."""
        if len(iterables) == 1 and iterables[0].kind == "tuple" and 0 < len(iterables[0].items) <= 12:
            return Val("tuple", items=tuple(self.call_value(fv, n, [x], {}, direct=False) for x in iterables[0].items))
        if all(v.kind == "tuple" for v in iterables) and len({len(v.items) for v in iterables}) == 1:
            return Val("tuple", items=tuple(self.call_value(fv, n, list(xs), {}, direct=False)
                                            for xs in zip(*(v.items for v in iterables))))
        return Val("seq", ref=self.call_value(fv, n, [self.element(v) for v in iterables], {}, direct=False))

    # -- qualified (module-level) callees --------------------------------------------------
    def call_qualified(self, q: str, n: ast.Call, args: list[Val], kwargs: dict[str, Val], env) -> Val:
        api = self.api
        if q in SCALAR_FUNCS:
            return Val("scalar", scalar_float=True)
        user = self.fa.user_sinks.get(q) or self.user_sink_by_short(q)
        if user is not None:
            self.contract_sink(user, n, args, kwargs)
            return self.after_sink([v for v in args if v.is_tensor or v.kind == "unknown"])
        sink = api.sinks.get(q)
        if sink is not None:
            self.contract_sink(sink, n, args, kwargs)
            if sink.autocast == "casts" and self.ac and api.torch_op(q) is not None:
                # autocast casts the inputs to one dtype (grid_sample: the widest): the op's own transfer
                return self.apply_op(api.torch_op(q), args[0] if args else None, args[1:], kwargs, n, self.short(q),
                                     function=True)
            if sink.contract in ("matmul", "sdpa") and self.ac:
                return self.lp_result()
            if sink.contract == "sdpa" and args:
                return self.after_sink([args[0]] + [v for v in args[1:3] if v.is_tensor])
            return self.after_sink([v for v in args if v.is_tensor or v.kind == "unknown"])
        if q in PARTIALS and args and args[0].kind in ("func", "qname", "module"):
            return self.partial(args[0], args[1:], kwargs)
        eco = api.ecosystem.get(q)
        if eco is not None:
            return self.call_ecosystem(eco, q, n, args, kwargs)
        if q.startswith("torch."):
            if q in ("torch.finfo", "torch.iinfo"):
                return UNKNOWN
            op = api.torch_op(q)
            if op is not None:
                recv = args[0] if args else None
                return self.apply_op(op, recv, args[1:], kwargs, n, self.short(q), function=True)
            return UNKNOWN
        found = self.fa.function_by_qname(q)
        if found is not None:
            fn, fa = found
            return self.call_function(fn, None, n, args, kwargs, recv_self=None, fa=fa)
        cnode, facts, cfa = self.fa.class_by_qname(q)
        if facts is not None:
            return self.construct(cnode, facts, cfa, n, args, kwargs)
        return UNKNOWN

    def construct(self, cnode, facts, cfa, n: ast.Call, args, kwargs) -> Val:
        """A project class instantiated in forward code: its constructor runs with the call's arguments
        (an nn.Module built here is opaque)."""
        from dtypelint.analysis.interp.frame import Frame
        from dtypelint.analysis.interp.values import ObjRef

        if any(b.rsplit(".", 1)[-1] in ("Module", "PreTrainedModel") for anc in self.fa.ancestors(facts) for b in anc.bases):
            return UNKNOWN
        found = self.fa.method_node(facts, "__init__")
        if found is None or self.depth >= MAX_DEPTH or self.fa.work.get(self.root, 0) > CALL_BUDGET or (
                not makes_tensors(found[0]) and not any(carries_data(v) for v in list(args) + list(kwargs.values()))):
            return Val("object", ref=ObjRef(facts, cfa))
        init, ifa = found
        sub = Frame(ifa, init, facts, self.regime, report=False, ac=self.ac, depth=self.depth + 1, root=self.root,
                    origin=self.origin)
        env = self.bind_args(init, args, kwargs, skip_self=True, opaque=False, defaults_frame=sub)
        me = (init.args.posonlyargs + init.args.args)[0].arg if (init.args.posonlyargs + init.args.args) else "self"
        env[me] = Val("self")
        key = ("init", id(init), self.regime, self.ac, self.fa.env_key(env))
        hit = ifa.memo.get(key)
        if hit is not None:
            return hit
        ifa.memo[key] = Val("object", ref=ObjRef(facts, cfa))  # recursion guard
        sub.run(env)
        attrs: dict[str, Val] = {}
        for st in sub.ends:
            for k, v in st.env.items():
                if isinstance(k, str) and k.startswith(me + ".") and k.count(".") == 1:
                    name = k[len(me) + 1:]
                    attrs[name] = join(attrs[name], v) if name in attrs else v
        out = Val("object", ref=ObjRef(facts, cfa, tuple(sorted(attrs.items()))))
        ifa.memo[key] = out
        return out

    def partial(self, fv: Val, bound: list[Val], kwargs: dict[str, Val]) -> Val:
        if fv.kind == "func":
            ref = fv.ref
            return Val("func", ref=replace(ref, bound=ref.bound + tuple(bound),
                                           bound_kw=ref.bound_kw + tuple(sorted(kwargs.items()))))
        if fv.kind == "qname":
            found = self.fa.function_by_qname(fv.const)
            if found is not None:
                return Val("func", ref=FuncRef(found[0], None, found[1], tuple(bound), tuple(sorted(kwargs.items()))))
        return fv

    def user_sink_by_short(self, q: str):
        for name, s in self.fa.user_sinks.items():
            if "." not in name and q.rsplit(".", 1)[-1] == name:
                return s
        return None

    @staticmethod
    def short(q: str) -> str:
        for pre, short in (("torch.nn.functional.", "F."), ("torch.", "torch.")):
            if q.startswith(pre):
                return short + q[len(pre):]
        return q

    def lp_result(self) -> Val:
        from dtypelint.analysis.lattice import tensor

        return tensor("low")

    @staticmethod
    def after_sink(vals: list[Val]) -> Val:
        """Result of an equal-dtype op: on a mismatch (reported at the sink) continue with the
        lower-precision operand's dtype, as if the fix were applied, so one bug gives one finding."""
        fl = [v for v in vals if v.is_float and not v.zdim]
        if len({v.kind for v in fl}) > 1:
            return min(fl, key=lambda v: (v.kind not in ("low", "olp"), len(v.prov)))
        res, _ = promote(vals)
        return res or UNKNOWN

    @staticmethod
    def first_tensor(vals) -> Val | None:
        for v in vals:
            if v.is_tensor:
                return v
        return None

    # -- methods --------------------------------------------------------------------------
    def call_method(self, recv: Val, meth: str, n: ast.Call, args, kwargs, env) -> Val:
        if recv.kind == "self":
            if self.cls is not None:
                key = f"self.{meth}"
                av = env.get(key) or self.self_attr(meth, n.func)
                if av.kind in ("module", "func", "qname"):
                    return self.call_value(av, n, args, kwargs)
                found = self.fa.method_node(self.cls, meth)
                if found is not None:
                    return self.call_value(Val("func", ref=FuncRef(found[0], self.cls, found[1])), n, args, kwargs)
            return UNKNOWN
        if recv.kind == "super":
            if self.cls is not None:
                found = self.fa.method_node(self.cls, meth, skip_self=True)
                if found is not None and meth != "__init__":
                    return self.call_function(found[0], self.cls, n, args, kwargs,
                                              recv_self=("self", self.self_kept, self.self_path, self.self_forced), fa=found[1])
            return UNKNOWN
        if recv.kind == "module":
            if meth == "forward":
                return self.call_module(recv.ref, n, args, kwargs)
            if meth in ("parameters", "buffers", "named_parameters", "named_buffers"):
                return self.module_parameters(recv.ref, n, named=meth.startswith("named_"))
            if meth in ("float", "half", "to", "bfloat16", "cuda", "eval", "train", "requires_grad_"):
                self.module_cast(n, meth, args, kwargs, env)
                return recv
            _, facts, cfa = self.fa.class_by_qname(recv.ref.cls)
            if facts is not None:
                found = self.fa.method_node(facts, meth)
                if found is not None:
                    return self.call_function(found[0], facts, n, args, kwargs,
                                              recv_self=(recv.ref.text, recv.ref.explicit, recv.ref.path, recv.ref.forced), fa=found[1])
            return UNKNOWN
        if recv.kind == "object":
            found = self.fa.method_node(recv.ref.cls, meth)
            if found is None:
                return UNKNOWN
            fn = found[0]
            params = fn.args.posonlyargs + fn.args.args
            me = params[0].arg if params else "self"
            return self.call_function(fn, recv.ref.cls, n, args, kwargs, recv_self=("self", "", "", ""), fa=found[1],
                                      self_env={f"{me}.{k}": v for k, v in recv.ref.attrs})
        if recv.kind == "dict":
            if meth == "get":
                key = n.args[0].value if n.args and isinstance(n.args[0], ast.Constant) else None
                if key is not None and key in recv.const:
                    return recv.items[recv.const.index(key)]
                return UNKNOWN
            if meth == "values":
                return Val("tuple", items=recv.items)
            return UNKNOWN
        if recv.kind in ("func", "qname", "str", "tuple", "seq"):
            if recv.kind == "tuple" and meth in ("index", "count"):
                return SCALAR
            return UNKNOWN
        if recv.is_tensor and meth == "is_floating_point" and not args and not kwargs:
            return floating_truth(recv.kind)
        if is_cast_unknown(recv):
            if meth in self.api.keep:
                return recv
            if meth in self.api.split:
                return Val("seq", ref=recv)
        if recv.is_tensor or recv.kind in ("unknown", "none"):
            if recv.kind != "unknown" or meth in self.api.casts or meth in (
                    "to", "type_as", "type", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor") \
                    or meth in self.index_family:
                return self.apply_op(meth, recv if recv.kind != "none" else UNKNOWN, args, kwargs, n, "." + meth,
                                     function=False)
        return UNKNOWN

    def call_bound(self, ref: FuncRef, n, args, kwargs, direct: bool = True) -> Val:
        return self.call_function(ref.node, ref.cls, n, args, kwargs,
                                  recv_self=("self", self.self_kept, self.self_path, self.self_forced), fa=ref.fa,
                                  ref=ref, direct=direct)

    # -- project functions ----------------------------------------------------------------
    def bind_args(self, fn, args: list[Val], kwargs: dict[str, Val], skip_self: bool, opaque: bool,
                  defaults_frame) -> dict[str, Val]:
        """Bind a call's values to ``fn``'s parameters; with ``*args``/``**kwargs`` at the call
        (``opaque``) parameters not bound explicitly are unknown rather than their defaults."""
        a = fn.args
        positional = list(a.posonlyargs) + list(a.args)
        if skip_self and positional:
            positional = positional[1:]
        env: dict[str, Val] = {}
        defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        for i, (p, d) in enumerate(zip(positional, defaults)):
            if i < len(args):
                env[p.arg] = args[i]
            elif p.arg in kwargs:
                env[p.arg] = kwargs[p.arg]
            else:
                env[p.arg] = defaults_frame.eval(d, {}) if d is not None and not opaque else UNKNOWN
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            env[p.arg] = kwargs.get(p.arg, defaults_frame.eval(d, {}) if d is not None and not opaque else UNKNOWN)
        if a.vararg:
            env[a.vararg.arg] = Val("tuple", items=tuple(args[len(positional):]))
        if a.kwarg:
            env[a.kwarg.arg] = UNKNOWN
        return env

    def call_function(self, fn, cls, n: ast.Call, args, kwargs, recv_self: tuple[str, str, str] | None,
                      fa=None, ref: FuncRef | None = None, self_env: dict | None = None, direct: bool = True) -> Val:
        from dtypelint.analysis.interp.frame import Frame

        fa = fa or self.fa
        if ref is not None and (ref.bound or ref.bound_kw):
            args = list(ref.bound) + list(args)
            kwargs = {**dict(ref.bound_kw), **kwargs}
        if isinstance(fn, ast.Lambda):
            return self.call_lambda(fn, ref, args, kwargs, fa)
        opaque = any(isinstance(a, ast.Starred) for a in n.args) or any(k.arg is None for k in n.keywords)
        if any(isinstance(a, ast.Starred) for a in n.args):
            known = sum(1 for _ in itertools.takewhile(lambda a: not isinstance(a, ast.Starred), n.args))
            if len(args) < known or not all(v.kind != "seq" for v in args):
                args = args[:known]
        same_file = fa is self.fa
        sub = Frame(fa, fn, cls, self.regime, report=self.report and same_file, ac=self.ac,
                    self_kept=recv_self[1] if recv_self else "", depth=self.depth + 1,
                    self_text=recv_self[0] if recv_self else "self", root=self.root,
                    self_path=recv_self[2] if recv_self else "", cond=self.current_cond(),
                    self_forced=recv_self[3] if recv_self else "", origin=self.origin)
        env = self.bind_args(fn, args, kwargs, skip_self=recv_self is not None, opaque=opaque, defaults_frame=sub)
        strict = self.fa.strict_params(fn, fa)
        if strict:
            ops = [self.operand(self.arg_node(fn, n, p, recv_self is not None), env[p]) for p in strict if p in env]
            for o, p in zip(ops, [p for p in strict if p in env]):
                if o.node is None:
                    o.label = p
            where = "" if same_file else f" ({fa.filename})"
            self.strict_sink(n, ops, fn.name, strict, where)
            # reported at this call: the callee runs as if fixed (one dtype), so one bug gives one finding
            fixed = self.after_sink([env[p] for p in strict if p in env])
            if fixed.is_float:
                for p in strict:
                    v = env.get(p)
                    if v is not None and v.is_float and not v.zdim and v.kind != fixed.kind:
                        env[p] = replace(v, kind=fixed.kind, prov=(), hint=None)
        if same_file:
            self.fa.called.add((self.regime, id(fn)))
            self.origin.called_by.setdefault((self.regime, self.root), set()).add(id(fn))
        if self.depth >= MAX_DEPTH or self.fa.work.get(self.root, 0) > CALL_BUDGET or id(fn) in self.fa.active:
            return UNKNOWN
        if recv_self is None and not self_env and not makes_tensors(fn) and not any(
                carries_data(v) for v in list(args) + list(kwargs.values())):
            return UNKNOWN  # a builder or config helper: no tensor in, none made inside
        if recv_self is not None:
            params = fn.args.posonlyargs + fn.args.args
            env[params[0].arg if params else "self"] = Val("self")
        if self_env:
            env.update(self_env)
        # the receiver's spelling only labels messages: calls of one class's method through different
        # attributes share a result; its fp32 status and its place in the model (keep lists) do not
        recv_key = None
        if recv_self is not None:
            keeps = cls is not None and bool(fa.keep_index.lists_for(cls))
            recv_key = (recv_self[1], recv_self[2] if keeps else "", recv_self[3] if len(recv_self) > 3 else "")
        alts = self.interpret(sub, env, recv_key)
        inputs_low = any(v.is_float and v.kind in ("low", "olp") for v in env.values())
        out = []
        for r, cl in alts:
            wide = r.is_float and r.kind in ("fp32", "fp64")
            # returned only where a rank test in the callee decides (a prepared 4-D mask passed through): the
            # value carries that, so a finding it causes is not claimed (the analysis does not know ranks)
            shaped = wide and cl is not None and cl.on_shape
            if wide and (inputs_low or shaped):
                r = r.with_step(self.fa.step(n, f"`{self.fa.seg(n.func)}(...)` returns {dtype_name(r.kind, self.fa.compute)}",
                                             "shape" if shaped else ""))
            r = self.keep_cast_marker(r, list(args) + list(kwargs.values()))
            out.append((self.output_hint(r, fn, cls, n, args) if direct else r, cl))
        return self.choose(out)

    def interpret(self, sub, env: dict[str, Val], recv_key) -> list[tuple[Val, Clause | None]]:
        """Run ``sub`` (a frame of the callee) from ``env``, or reuse the result of an earlier run with the
        same dtypes: its returned alternatives, and its sink events recorded again for this entry."""
        fn, fa = sub.fn, sub.fa
        same_file = fa is self.fa
        key = (id(fn), id(fa), self.regime, self.ac, recv_key, self.fa.env_key(env))
        memo = self.fa.memo if same_file else fa.memo
        if key in memo:
            alts, found, sensitive = memo[key]
            if sensitive and self.regime == "half":
                self.origin.loaded_sensitive.add(self.root)  # the reused run read facts `loaded` reads differently
            if self.report and same_file:
                done = self.fa._replayed
                for e in found:
                    if (id(e), self.root) not in done:
                        done.add((id(e), self.root))
                        self.fa.record(e if e.root == self.root else replace(e, root=self.root))
            return alts
        memo[key] = ([(UNKNOWN, None)], [], False)  # recursion guard
        collected: list = []
        self.fa.collectors.append(collected)
        self.fa.active.add(id(fn))
        marks = self.origin.sensitive_marks
        try:
            returns = sub.run(env)
        finally:
            self.fa.collectors.pop()
            self.fa.active.discard(id(fn))
        alts = self.return_alternatives(returns, fn)
        memo[key] = (alts, collected, self.origin.sensitive_marks != marks)
        return alts

    def call_lambda(self, fn: ast.Lambda, ref: FuncRef | None, args, kwargs, fa) -> Val:
        from dtypelint.analysis.interp.frame import Frame

        sub = Frame(fa, fn, self.cls, self.regime, report=self.report and fa is self.fa, ac=self.ac,
                    self_kept=self.self_kept, depth=self.depth + 1, self_text=self.self_text, root=self.root,
                    self_path=self.self_path, cond=self.current_cond(), self_forced=self.self_forced,
                    origin=self.origin)
        env = dict(self.cur_env)
        env.update(self.bind_args(fn, args, kwargs, skip_self=False, opaque=False, defaults_frame=sub))
        sub.state.env = env
        sub._chooser = self
        return sub.eval(fn.body, env)

    def return_alternatives(self, returns, fn) -> list[tuple[Val, Clause | None]]:
        """The callee's returned values, one per distinct dtype signature, with the path clause."""
        groups: dict[tuple, tuple[Val, list]] = {}
        order = []
        for v, clauses in returns:
            sig = signature(v)
            if sig in groups:
                old, cls_list = groups[sig]
                groups[sig] = (join(old, v), cls_list + [clauses])
            else:
                groups[sig] = (v, [clauses])
                order.append(sig)
        if len(order) == 1:
            return [(groups[order[0]][0], None)]
        out = []
        name = getattr(fn, "name", "lambda")
        for sig in order:
            v, clause_lists = groups[sig]
            shared = [c for c in clause_lists[0] if all(c in cl for cl in clause_lists[1:])]
            # returned only on paths that depend on a tensor's shape: so is every finding that needs this value
            on_shape = all(any(c.on_shape for c in cl) for cl in clause_lists)
            text = " and ".join(c.text for c in shared)
            if text:
                cl = Clause(f"ret:{id(fn)}:{len(out)}", True, f"{text} in `{name}()`", on_shape=on_shape)
            elif on_shape:
                cl = Clause(f"ret:{id(fn)}:{len(out)}", True, f"a shape test in `{name}()`", on_shape=True)
            else:
                cl = None
            out.append((v, cl))
        return out

    def arg_node(self, fn, n: ast.Call, pname: str, skip_self: bool) -> ast.AST | None:
        positional = [p.arg for p in fn.args.posonlyargs + fn.args.args]
        if skip_self and positional:
            positional = positional[1:]
        if pname in positional:
            i = positional.index(pname)
            if i < len(n.args) and not any(isinstance(a, ast.Starred) for a in n.args[:i + 1]):
                return n.args[i]
        for k in n.keywords:
            if k.arg == pname:
                return k.value
        return None

    @staticmethod
    def keep_cast_marker(r: Val, inputs: list[Val]) -> Val:
        """An unknown result computed from a value its author cast to an unseen dtype stays marked."""
        if r.kind == "unknown" and r.const != "cast" and any(is_cast_unknown(v) for v in inputs if v is not None):
            return CAST_UNKNOWN
        return r

    # -- ecosystem callables ---------------------------------------------------------------
    def call_ecosystem(self, eco, q: str, n: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> Val:
        """A library callable whose body is out of reach but whose dtype behaviour the API table knows."""
        from dtypelint.analysis.interp.values import ModuleRef

        if eco.access == "module-call":  # `get_activation("gelu")`: returns a module instance
            return Val("module", ref=ModuleRef(self.fa.seg(n), q, filename=self.fa.filename, row=n.lineno,
                                               col=n.col_offset + 1))
        if eco.access == "class-call":  # `get_act_layer("gelu")`: returns a module class
            return Val("modclass", ref=ModuleRef(self.fa.seg(n), q, filename=self.fa.filename, row=n.lineno,
                                                 col=n.col_offset + 1))
        if eco.behaviour == "call-first":  # checkpoint(fn, *args): fn(*args)
            if not args:
                return UNKNOWN
            kw = {k: v for k, v in kwargs.items() if k not in eco.drop_kwargs}
            return self.call_value(args[0], n, args[1:], kw, direct=False)
        x = args[0] if args else UNKNOWN
        if eco.behaviour == "keep":
            if x.is_tensor or is_cast_unknown(x):
                return x
            return UNKNOWN
        if eco.behaviour == "reduce":
            how = n.args[2].value if len(n.args) > 2 and isinstance(n.args[2], ast.Constant) else None
            if x.is_tensor and self.ac and how in ("sum", "prod") and x.is_float and x.kind != "fp64":
                return x.__class__("fp32", prov=x.prov + (self.fa.step(n, f"`{self.fa.seg(n.func)}(..., '{how}')` reduces with `{how}`, which runs in float32 under CUDA autocast"),))
            return x if x.is_tensor else UNKNOWN
        if eco.behaviour == "einsum":
            return self.apply_op("einsum", None, args, kwargs, n, eco.label, function=True)
        return UNKNOWN
