"""Modules: ``self`` attributes, parameters and buffers per regime, and calls of submodules.

What ``__init__`` builds comes from ``module_facts`` (possibly for a class in another
file).  A parameter's dtype depends on the regime: float32 under autocast, the compute
dtype after ``.half()``, and under ``loaded`` the compute dtype unless it was created
in float32 explicitly or a ``_keep_in_fp32_modules`` list of a model that contains this
module names it.  Submodules of torch.nn and of the libraries in the API table behave
as the table says; project modules run their ``forward`` with the actual arguments.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from dtypelint.analysis.interp.values import ModuleRef
from dtypelint.analysis.lattice import NONE, SCALAR, UNKNOWN, Step, Val, dtype_name, tensor
from dtypelint.analysis.paths import Clause, clause


class _Recorder:
    """Passes choices on to the frame that asked, noting that the value had alternatives."""

    def __init__(self, frame):
        self.frame = frame
        self.chose = False

    def choose(self, alts):
        self.chose = True
        return self.frame.choose(alts)


class ModuleMixin:
    # -- self attributes ------------------------------------------------------------------
    def self_attr(self, a: str, n: ast.AST) -> Val:
        if self.cls is None:
            return UNKNOWN
        fact = None
        for anc in self.fa.ancestors(self.cls):
            fact = anc.attr(a)
            if fact is not None:
                break
        if fact is None:
            if a == "training":
                return Val("pybool", const=None)
            found = self.fa.method_node(self.cls, a)
            if found is not None:
                from dtypelint.analysis.interp.values import FuncRef

                return Val("func", ref=FuncRef(found[0], self.cls, found[1]))
            return UNKNOWN
        text = f"{self.self_text}.{a}"
        if fact.kind == "module":
            if fact.fp32 or self._keeps(self.cls):
                self.loaded_differs()
            kept = explicit = ""
            path = f"{self.self_path}.{a}" if self.self_path else a
            if self.regime == "loaded":
                explicit = self.self_kept
                if not explicit and fact.fp32:
                    explicit = f"`{text}` is built with `dtype=torch.float32` / `.float()` in `__init__`"
                kept = explicit or (self.fa.kept_reason(self.cls, path, True) if fact.cls.startswith("torch.nn.") else "")
            ref = ModuleRef(text, fact.cls, kept, fact.row, fact.col, fact.filename or self.fa.filename,
                            fact.elem, fact.chain, path, explicit, fact.alts, fact.optional, self.cls.qname,
                            items=fact.items, elem_chain=fact.elem_chain)
            if self.self_forced:
                # the whole instance was converted to float32 at run time: its submodules too
                ref = replace(ref, kept=self.self_forced, explicit=self.self_forced, forced=self.self_forced)
            if fact.recast:
                # a method converts it at run time (`self.sub.float()` outside `__init__`): its dtype is not known
                ref = replace(ref, cls="<recast>", alts=())
            return Val("module", ref=ref)
        if fact.kind in ("param", "buffer", "tensor"):
            return self.tensor_attr(fact, text)
        if fact.kind == "scalar":
            return SCALAR
        if fact.kind == "none":
            return NONE
        if fact.kind == "optional":
            test = ast.Compare(left=n, ops=[ast.Is()], comparators=[ast.Constant(None)]) \
                if isinstance(n, ast.Attribute) else None
            if test is None:
                return UNKNOWN
            return self.choose([(SCALAR, clause(test, False, self.fa.seg)), (NONE, clause(test, True, self.fa.seg))])
        if fact.kind == "callable":
            alts = [(Val("qname", const=q), None) for q in (fact.cls,) + fact.alts]
            return self.choose(alts)
        if fact.kind == "other" and fact.expr is not None:
            return self.init_value(fact)
        if fact.kind == "plist":
            return Val("seq", ref=self.tensor_attr(replace(fact, kind="param"), f"{text}[i]"))
        return UNKNOWN

    def init_value(self, fact) -> Val:
        """An attribute `__init__` sets to a callable expression (``functools.partial(KERNELS[mode], ...)``):
        evaluated in the class's file with the constructor's arguments unknown.  Only callables are kept."""
        from dtypelint.analysis.interp.frame import Frame

        key = (id(fact.expr), self.regime, self.ac)
        hit = self.fa.init_values.get(key)
        if hit is not None:
            return hit
        _, facts, cfa = self.fa.class_by_qname(self.cls.qname)
        if cfa is None:
            return UNKNOWN
        frame = Frame(cfa, self.fn, self.cls, self.regime, report=False, depth=self.depth + 1, root=self.root,
                      origin=self.origin)
        chooser = _Recorder(self)
        frame._chooser = chooser  # alternatives (a kernel picked from a dict) become this path's choices
        v = frame.eval(fact.expr, {})
        v = v if v.kind in ("func", "qname", "module", "object") else UNKNOWN
        if not chooser.chose:
            self.fa.init_values[key] = v  # the same on every path: evaluated once
        return v

    def tensor_attr(self, fact, text: str) -> Val:
        what = {"param": "nn.Parameter", "buffer": "buffer", "tensor": "plain tensor attribute"}[fact.kind]
        shape = "0-dim" if fact.shape == "0dim" else (f"shape {fact.shape}" if fact.shape != "?" else "")
        zdim = fact.shape == "0dim"
        d = fact.dtype
        if d in ("int", "bool"):
            return tensor(d, zdim=zdim)
        if d == "lowexp":
            return tensor("low", zdim=zdim)
        regime = self.regime
        fp32_kind = "fp64" if d == "fp64" else "fp32"

        def src(reason: str) -> Val:
            dn = dtype_name(fp32_kind, self.fa.compute)
            msg = f"`{text}` is a {dn} {what}{' (' + shape + ')' if shape else ''} in the {regime} regime: {reason}"
            return tensor(fp32_kind, (Step(fact.filename or self.fa.filename, fact.row, fact.col, msg),), zdim=zdim)

        if self.self_forced and fact.kind in ("param", "buffer"):
            return src(self.self_forced)
        if (fact.kind == "tensor" and d == "default") or fact.fp32 or d == "fp64" or self._keeps(self.cls):
            self.loaded_differs()
        if fact.kind == "tensor":
            if d in ("fp32", "fp64"):
                return src("it is created in that dtype explicitly")
            if regime == "loaded":
                return tensor("low", zdim=zdim)
            if d == "default":
                return src("a plain tensor attribute is not converted by `.half()`/`.to()` and keeps the default dtype"
                           if regime == "half" else "tensors stay float32 under autocast")
            return UNKNOWN
        if regime == "autocast":
            return src("parameters and buffers stay float32 under autocast")
        if regime == "half":
            return tensor("low", zdim=zdim)
        # loaded
        path = f"{self.self_path}.{fact.name}" if self.self_path else fact.name
        # keep lists match the state dict's names: a non-persistent buffer is not loaded, so not kept
        listed = fact.persistent and self.cls is not None
        reason = self.self_kept or (self.fa.kept_reason(self.cls, path, False) if listed else "")
        if reason:
            return src(f"kept in float32 when loaded ({reason})")
        if listed and self.fa.maybe_kept(self.cls, path, False):
            return UNKNOWN
        if fact.fp32 or d == "fp64":
            return src("it is created with an explicit float32 dtype / `.float()` in `__init__`, which loading keeps")
        return tensor("low", zdim=zdim)

    def module_param(self, ref: ModuleRef, pname: str, n: ast.AST) -> Val:
        _, facts, _ = self.fa.class_by_qname(ref.cls)
        if facts is not None:
            fact = next((f for anc in self.fa.ancestors(facts) for f in anc.attrs if f.name == pname), None)
            if fact is not None and fact.kind in ("param", "buffer", "tensor"):
                return self.sub_frame(facts, ref).tensor_attr(fact, f"{ref.text}")
        if not (ref.cls.startswith("torch.nn.") or self.api.ecosystem_module(ref.cls) is not None):
            return UNKNOWN
        text = f"{ref.text}.{pname}"
        if ref.forced:
            msg = f"`{text}` is float32: {ref.forced}"
            return tensor("fp32", (Step(self.fa.filename, ref.row, ref.col, msg),), kept=ref.text)
        if ref.explicit or self._keeps(self.cls):
            self.loaded_differs()
        if self.regime == "autocast":
            msg = f"`{text}` is a float32 parameter in the autocast regime (parameters stay float32 under autocast)"
            return tensor("fp32", (Step(ref.filename, ref.row, ref.col, msg),))
        if self.regime == "loaded" and ref.kept:
            msg = f"`{text}` is float32 in the loaded regime: {ref.kept}"
            return tensor("fp32", (Step(ref.filename, ref.row, ref.col, msg),), kept=ref.text)
        if self.regime == "loaded" and self.cls is not None and self.fa.maybe_kept(self.cls, ref.path, True):
            return UNKNOWN
        return tensor("low")

    def sub_frame(self, facts, ref: ModuleRef):
        from dtypelint.analysis.interp.frame import Frame

        return Frame(self.fa, self.fn, facts, self.regime, report=False, self_kept=ref.explicit, origin=self.origin,
                     self_text=ref.text, self_path=ref.path, self_forced=ref.forced)

    def submodule_attr(self, ref: ModuleRef, a: str, n: ast.AST) -> Val:
        _, facts, _ = self.fa.class_by_qname(ref.cls)
        if facts is None:
            return UNKNOWN
        return self.sub_frame(facts, ref).self_attr(a, n)

    def loaded_differs(self) -> None:
        """This path consulted a fact the ``loaded`` regime reads differently from ``half`` (a keep list,
        an explicit float32 choice, a plain tensor attribute): the entry function runs in both."""
        if self.regime == "half":
            self.origin.loaded_sensitive.add(self.root)
            self.origin.sensitive_marks += 1

    def _keeps(self, facts) -> bool:
        return facts is not None and bool(self.fa.keep_index.lists_for(facts))

    def module_parameters(self, ref: ModuleRef, n: ast.AST, named: bool = False) -> Val:
        """``module.parameters()`` / ``named_parameters()``: a sequence of the module's parameters (in its dtype).

        A torch layer with weights (``nn.Linear``, convolutions, norms, embeddings) has at least one, so a loop over
        them runs at least once (``const="nonempty"``): the path where it does not is not a path of real code.
        """
        self.loaded_differs()
        leaf = ref.cls.startswith("torch.nn.") and self.api.module_kind.get(ref.cls[len("torch.nn."):]) in (
            "linear", "norm_fp32", "embedding")
        if ref.forced or (self.regime == "loaded" and (ref.explicit or (leaf and ref.kept))):
            why = ref.forced or ref.explicit or ref.kept
            elem = tensor("fp32", (Step(self.fa.filename, ref.row, ref.col, f"`{ref.text}` is float32: {why}"),))
        elif self.regime == "autocast":
            elem = tensor("fp32", (Step(self.fa.filename, ref.row, ref.col,
                                        f"`{ref.text}`'s parameters stay float32 under autocast"),))
        elif self.regime == "half" or leaf:
            elem = tensor("low")
        else:
            elem = UNKNOWN  # loaded: keep lists may keep some of its submodules
        if named:
            elem = Val("tuple", items=(Val("str"), elem))
        return Val("seq", ref=elem, const="nonempty" if leaf else None)

    def member(self, ref: ModuleRef, key, cls: str, fp32: bool) -> ModuleRef:
        """One member of a container module: its own path (matched by keep lists) and fp32 choice."""
        path = f"{ref.path}.{key}"
        text = f"{ref.text}[{key!r}]"
        if fp32 or ref.owner:
            self.loaded_differs()
        explicit = ref.explicit
        if not explicit and fp32 and self.regime == "loaded":
            explicit = f"`{text}` is built with `dtype=torch.float32` / `.float()` in `__init__`"
        kept = ref.forced or explicit or (self.fa.kept_reason_for_owner(ref.owner, path, True)
                                          if self.regime == "loaded" and cls.startswith("torch.nn.") else "")
        return ModuleRef(text, cls, kept, ref.row, ref.col, ref.filename, path=path, explicit=explicit,
                         owner=ref.owner, forced=ref.forced)

    def module_item(self, ref: ModuleRef, n: ast.Subscript) -> Val:
        """``self.heads["boxes"]`` of an ``nn.ModuleDict`` / ``self.layers[0]``: that member, or any member."""
        key = n.slice.value if isinstance(n.slice, ast.Constant) else None
        for k, cls, fp32 in ref.items:
            if key is not None and k == key:
                return Val("module", ref=self.member(ref, k, cls, fp32))
        if ref.items and key is None:
            return self.choose([(Val("module", ref=self.member(ref, k, c, f)),
                                 Clause(f"item:{ref.path}:{k}", True, f"`{ref.text}[{k!r}]` is used"))
                                for k, c, f in ref.items])
        return UNKNOWN

    def module_iter(self, ref: ModuleRef) -> Val:
        """An element of a ModuleList whose members have several classes (appended by a factory)."""
        if ref.chain and ref.cls == "torch.nn.ModuleList":
            first = ModuleRef(f"{ref.text}[i]", ref.chain[0], ref.kept, ref.row, ref.col, ref.filename,
                              path=f"{ref.path}.0", explicit=ref.explicit, owner=ref.owner, forced=ref.forced,
                              alts=tuple(ref.chain[1:]))
            return Val("module", ref=first)
        return UNKNOWN

    def qname_item(self, q: str, n: ast.Subscript) -> Val:
        """``ACT2FN[config.hidden_act]``: a module instance when the API table knows the mapping."""
        eco = self.api.ecosystem.get(q)
        if eco is not None and eco.access == "subscript":
            return Val("module", ref=ModuleRef(self.fa.seg(n), q, filename=self.fa.filename, row=n.lineno,
                                               col=n.col_offset + 1))
        return UNKNOWN

    def module_cast(self, n: ast.Call, meth: str, args, kwargs, env) -> None:
        """``self.sub.float()`` in a method: from here on the submodule's parameters are float32."""
        f = n.func
        target = f.value if isinstance(f, ast.Attribute) else None
        key = self.attr_key(target) if isinstance(target, ast.Attribute) else None
        if key is None:
            return
        cur = self.eval(target, env)
        if cur.kind != "module":
            return
        to_fp32 = meth == "float" or (meth == "to" and any(v.kind == "dtype" and v.const == "fp32"
                                                           for v in list(args) + list(kwargs.values())))
        to_low = meth in ("half", "bfloat16") or (meth == "to" and any(v.kind == "dtype" and v.const in ("low", "olp")
                                                                      for v in list(args) + list(kwargs.values())))
        if to_fp32:
            why = f"`{self.fa.seg(n)}` converts it to float32 at run time"
            env[key] = Val("module", ref=replace(cur.ref, kept=why, explicit=why, forced=why))
        elif to_low:
            env[key] = Val("module", ref=replace(cur.ref, kept="", explicit="", forced=""))

    # -- calling modules --------------------------------------------------------------------
    def call_module(self, ref: ModuleRef, n: ast.Call, args, kwargs) -> Val:
        return self.keep_cast_marker(self._call_module(ref, n, args, kwargs), list(args) + list(kwargs.values()))

    def _call_module(self, ref: ModuleRef, n: ast.Call, args, kwargs) -> Val:
        if ref.alts:
            self.loaded_differs()
            # one of several classes `__init__` may choose: each path sees one
            outs = []
            for i, c in enumerate((ref.cls,) + ref.alts):
                kept = ref.explicit or (self.fa.kept_reason_for_owner(ref.owner, ref.path, True)
                                        if self.regime == "loaded" and c.startswith("torch.nn.") else "")
                r = self._call_module(replace(ref, cls=c, alts=(), kept=kept if i else ref.kept), n, args, kwargs)
                outs.append((r, Clause(f"alt:{ref.path}:{c}", True, f"`{ref.text}` is `{c.rsplit('.', 1)[-1]}`")))
            return self.choose(outs)
        x = args[0] if args else next(iter(kwargs.values()), UNKNOWN)
        eco = self.api.ecosystem_module(ref.cls)
        if eco is not None:
            return self.ecosystem_module_call(eco, ref, n, x)
        if ref.cls.startswith("torch.nn."):
            return self.nn_module_call(ref, n, x, args, kwargs)
        _, facts, cfa = self.fa.class_by_qname(ref.cls)
        if facts is None:
            return UNKNOWN
        found = self.fa.method_node(facts, "forward")
        if found is None:
            return UNKNOWN
        return self.call_function(found[0], facts, n, args, kwargs,
                                  recv_self=(ref.text, ref.explicit, ref.path, ref.forced), fa=found[1])

    def ecosystem_module_call(self, eco, ref: ModuleRef, n: ast.Call, x: Val) -> Val:
        label = eco.label or ref.cls.rsplit(".", 1)[-1]
        if eco.behaviour == "keep":
            if x.is_float and x.kind in ("fp32", "fp64") and x.prov:
                return x.with_step(self.fa.step(n, f"`{ref.text}` ({label}) keeps its input's dtype"))
            return x if (x.is_tensor or x.kind == "unknown") else UNKNOWN
        if eco.behaviour == "linear":
            return self.linear_call(ref, n, x, f"{label}")
        return UNKNOWN

    def nn_module_call(self, ref: ModuleRef, n: ast.Call, x: Val, args, kwargs=None) -> Val:
        kind = self.api.module_kind.get(ref.cls[len("torch.nn."):])
        cname = "nn." + ref.cls[len("torch.nn."):]
        if kind == "linear":
            return self.linear_call(ref, n, x, cname)
        if kind == "norm_fp32":
            if self.ac and (x.is_float or x.kind == "unknown"):
                return tensor("fp32", x.prov + (self.fa.step(n, f"`{cname}` runs in float32 under CUDA autocast (layer_norm/group_norm/rms_norm are on its fp32 list)"),))
            w = self.module_param(ref, "weight", n)
            if x.kind in ("low", "olp") and w.kind in ("fp32", "fp64") and ref.explicit:
                # an fp32 norm on a low-precision input (CPU mixed path): output in the input dtype (facts §3)
                return x
            return x if x.is_float else UNKNOWN
        if kind == "softmax":
            if self.ac and x.is_float:
                return tensor("fp32", x.prov + (self.fa.step(n, f"`{cname}` runs in float32 under CUDA autocast"),))
            return x
        if kind == "keep":
            return x
        if kind == "embedding":
            w = self.module_param(ref, "weight", n)
            self.module_arg_sink(ref, n, w, list(args), kwargs or {})
            return w
        if ref.chain and ref.cls == "torch.nn.Sequential":
            self.loaded_differs()
            out = x
            for i, c in enumerate(ref.chain):
                sub_path = f"{ref.path}.{i}"
                sub_kept = ref.explicit or (self.fa.kept_reason_for_owner(ref.owner, sub_path, True)
                                            if self.regime == "loaded" else "")
                sub = ModuleRef(f"{ref.text}[{i}]", c, sub_kept, ref.row, ref.col, ref.filename,
                                path=sub_path, explicit=ref.explicit, owner=ref.owner)
                out = self.call_module(sub, n, [out], {})
            return out
        return UNKNOWN

    def linear_call(self, ref: ModuleRef, n: ast.Call, x: Val, cname: str) -> Val:
        w = self.module_param(ref, "weight", n)
        if self.ac:
            if x.is_float:
                self.fa.fates.cast_back(x.prov)  # autocast casts the input to the low precision
            return tensor("low") if (x.is_float or x.kind == "unknown") else UNKNOWN
        label = f"{self.fa.seg(n.func) if isinstance(n.func, ast.Name) else ref.text}.weight"
        inp = n.args[0] if n.args else None
        self.matmul_sink(n, [self.operand(inp, x) if inp is not None else self.operand(None, x),
                             self.weight_operand(label, w)], f"{ref.text}(...)", module=cname)
        if x.is_float and w.is_float:
            # on a mismatch (reported) continue in the lower precision, so one bug gives one finding
            out = x if x.kind in ("low", "olp") or w.kind == x.kind else w
            if w.kind == x.kind and w.kind in ("fp32", "fp64") and ref.kept:
                return replace(x, kept=ref.text).with_step(self.fa.step(n, f"`{ref.text}` is kept in float32 in the loaded regime, so its output is float32",
                                                                        origin="island" if ref.explicit else ""))
            return out
        return x if x.is_float else UNKNOWN

    def weight_operand(self, label: str, w: Val):
        from dtypelint.analysis.events import Operand

        return Operand(label, w, None)
