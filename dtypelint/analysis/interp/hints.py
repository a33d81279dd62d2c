"""Where a fix can be spelled: anchors, dtype expressions in scope, and fixes at the fp32 source.

A value carries a ``hint`` when the fix is better made where the float32 value is born
than at the sink: the fp32 operand of a promotion (``self.k_a.to(k.dtype)``), the
output of a norm or rotary callee (``self.q_norm(x).to(x.dtype)``), an allocation
without ``dtype=``.  Rules read hints and the scope from the events.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from dtypelint.analysis.lattice import Val

# callees whose float32 output is cast back where it is produced (norms, rotary embeddings)
NORM_OR_ROTARY = re.compile(r"norm|rotary|rope|rotate|pos_?emb", re.I)


class HintMixin:
    def operand_hint(self, res: Val, inputs: list[Val], nodes: list | None) -> Val:
        """A low-precision activation promoted by one fp32 parameter/buffer/attribute (``k * self.k_a``):
        the fix casts that operand where it is used (``self.k_a.to(k.dtype)``), unless the fp32 value
        already carries a hint from further upstream."""
        if res.hint is not None or not nodes or len(nodes) != len(inputs):
            return res
        wide = [(v, nd) for v, nd in zip(inputs, nodes) if v.is_float and not v.zdim and v.kind == res.kind]
        lows = [(v, nd) for v, nd in zip(inputs, nodes) if v.is_float and not v.zdim and v.kind in ("low", "olp")]
        if len(wide) != 1 or not lows or wide[0][1] is None or not self.attr_rooted(wide[0][1]):
            return res
        for v, nd in lows:
            anc = self.anchor(nd)
            if anc is not None and v.kind == "low":
                return replace(res, hint=("operand", wide[0][1], f"{self.fa.seg(anc)}.dtype", id(self.fa)))
        if any(v.kind == "low" for v, _ in lows):
            scope = self.dtype_in_scope("low")  # `F.silu(self.k_proj(x)) * self.k_scale`: a dtype in scope
            if scope:
                return replace(res, hint=("operand", wide[0][1], scope[0], id(self.fa)))
        return res

    @staticmethod
    def attr_rooted(node: ast.AST) -> bool:
        """``self.k_a``, ``self.scale.clamp_max(m).exp()``, ``self.cos_cached[:T]`` (not ``self.norm(x)``)."""
        while True:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                return node.value.id == "self"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if isinstance(node.func.value, ast.Name):
                    return False  # self.method(...) / x.op(...)
                node = node.func.value
            elif isinstance(node, (ast.Attribute, ast.Subscript)):
                node = node.value
            else:
                return False

    def dtype_in_scope(self, kind: str, env: dict[str, Val] | None = None) -> list[str]:
        """Dtype expressions naming ``kind`` here: captured dtypes (``dtype = x.dtype``) first, then
        ``t.dtype`` of local tensors of that dtype."""
        captured, tensors = [], []
        assigned = self.fa.assignments(self.fn)
        for name, v in (self.cur_env if env is None else env).items():
            if not isinstance(name, str) or not name.isidentifier():
                continue
            if v.kind == "dtype" and v.const == kind and any(
                    isinstance(a, ast.Attribute) and a.attr == "dtype" for a in assigned.get(name, ())):
                captured.append(name)
            elif v.is_tensor and v.kind == kind and not v.zdim:
                tensors.append(f"{name}.dtype")
        return captured + tensors

    def output_hint(self, r: Val, fn, cls, n: ast.Call, args) -> Val:
        """A norm or rotary callee that returns float32 for a low-precision input: the fix casts its
        output back where it is produced (``self.q_norm(x).to(x.dtype)``), unless the fp32 value
        comes from a hint outside the callee (an argument's source)."""
        if r.kind not in ("fp32", "fp64") or r.zdim or not n.args:
            return r
        if r.hint is not None:
            node = r.hint[1]
            inside = getattr(node, "lineno", 0) >= fn.lineno and getattr(node, "end_lineno", 0) <= (fn.end_lineno or 0)
            if not inside or r.hint[3] != id(self.fa):
                return r
        name = f"{self.fa.seg(n.func)} {getattr(fn, 'name', '')} {cls.qname if cls is not None else ''}"
        if not NORM_OR_ROTARY.search(name):
            return r
        x = args[0] if args else Val("unknown")
        if x.kind != "low" or x.zdim:
            return r
        anc = self.anchor(n.args[0])
        scope = self.dtype_in_scope("low")
        captured = [c for c in scope if "." not in c]
        if captured:
            target = captured[0]
        elif anc is not None:
            target = f"{self.fa.seg(anc)}.dtype"
        elif scope:
            target = scope[0]  # `self.q_norm(self.wq(x))`: a compute-dtype tensor in scope, `x.dtype`
        else:
            return r
        return replace(r, hint=("output", n, target, id(self.fa)))

    def local_text(self, text: str) -> str:
        """``self.head.cell.proj.weight`` seen from a caller's context, as this method spells it
        (``self.proj.weight``): fix edits are made in this function's body."""
        if self.self_text != "self" and self.cls is not None and text.startswith(self.self_text + "."):
            params = self.param_names()
            me = params[0].arg if params else "self"
            return me + text[len(self.self_text):]
        return text

    @staticmethod
    def simple(node: ast.AST | None) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name)

    def anchor(self, node: ast.AST | None) -> ast.AST | None:
        """The simplest sub-expression with the same dtype: ``r.view(B, T, H, -1)`` -> ``r``."""
        keep = self.api.keep | self.api.split
        while node is not None and not self.simple(node):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in keep:
                if self.fa.names.qualify(node.func) is not None:
                    # a function of a module (`F.silu(x)`), not a tensor method: its first argument
                    if not node.args or isinstance(node.args[0], ast.Starred):
                        return None
                    node = node.args[0]
                else:
                    node = node.func.value
            elif isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
                node = node.value
            else:
                return None
        return node
