"""Abstract interpretation of function bodies over the dtype lattice, once per regime.

``FileAnalysis`` holds what is known about one file (imports, classes, helpers,
the project index); ``Frame`` interprets one function body in one regime:
straight-line code, if/else joined (branches on dtype tests that are decided in
the regime are pruned), loops to a fixpoint, tuple unpacking, ``with`` blocks
including ``torch.autocast(..., enabled=False)`` / ``dtype=...`` regions, early
returns.  Calls to helpers and submodule ``forward``s in the same file are
interpreted with the actual abstract arguments; across files the project index's
summaries are used.  Sinks (the contracts in ``torch_api.toml``, user sinks,
callees that assert equal dtypes) record ``RawFinding``s that the rules turn into
diagnostics.

Regimes (DESIGN.md): ``autocast`` - fp32 parameters, forward under CUDA autocast;
``half`` - every floating parameter/buffer low, no autocast; ``loaded`` - built in
the compute dtype except explicit fp32 choices and ``_keep_in_fp32_modules``.

Entry points and context.  Every function is first interpreted on its own, with its
tensor parameters taken as activations in the compute dtype (unknown under autocast,
where layer inputs are a mix of an fp32 residual stream and low-precision op outputs).
A function that is called in the same file is also interpreted in each caller's
context; its on-its-own findings are dropped when a caller's context shows the sink
is fine, so deliberate fp32 paths (a time embedding into a module kept in fp32) stay
quiet.  After an equal-dtype sink reports, interpretation continues with the lower
precision (as if fixed), so one bug gives one finding.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field, replace
from typing import Any

from dtypelint.analysis.api import SinkDef, load_api
from dtypelint.analysis.lattice import (
    FLOATS, NONE, SCALAR, UNKNOWN, Step, Val, dtype_name, dtype_val, join, promote, tensor,
)
from dtypelint.analysis.module_facts import ClassFacts, dtype_of_expr
from dtypelint.analysis.names import Names, canonical_torch

# parameters whose names say they are integer/bool tensors or objects, not activations
# parameters that name Python integers (sizes, counts): scalars, never tensors
SCALAR_PARAM = re.compile(r"^(dims?|\w+_dim|num_\w+|n|n_\w+|sizes?|\w+_size|layer_idx|head_dim|steps?|seq_len|max_\w+)$")
NON_ACTIVATION = re.compile(
    r"(^|_)(ids?|mask|masks|index|indices|idx|positions?|pos|lengths?|seqlens?|cu_seqlens\w*|steps?|offsets?|"
    r"labels?|layer_idx|past\w*|layer_past|kwargs|config|generator|training|module|self|cls|"
    r"timesteps?|t|sizes?|shape|dims?|num\w*|n|device|\w*_device|dtype|\w*_dtype|\w*_ids|\w*_mask)$"
)
AUTOCAST_NAMES = ("torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast_mode.autocast",
                  "torch.cpu.amp.autocast")
INDEX_FAMILY = {
    # method: (index of the source argument, raises under autocast?)
    "index_put_": (1, True), "index_put": (1, False), "index_copy_": (2, True), "index_copy": (2, True),
    "index_add_": (2, True), "index_add": (2, True), "scatter_": (2, True), "scatter": (2, True),
    "scatter_add_": (2, True), "scatter_add": (2, False), "masked_scatter_": (1, True),
    "masked_scatter": (1, True), "lerp_": (0, True), "lerp": (0, True),
}
MAX_DEPTH = 4
CONTEXT_CHECKED = frozenset({"DTL101", "DTL102", "DTL103", "DTL105"})
SHAPE = Val("shape")  # `x.shape` / `x.size()`: its items are Python ints
# calls that return Python numbers (their arguments are numbers too)
SCALAR_FUNCS = frozenset({"math.sqrt", "math.log", "math.exp", "math.pow", "math.ceil", "math.floor", "math.prod",
                          "math.log2", "math.log10", "math.cos", "math.sin", "math.pi", "math.inf", "math.e"})
SCALAR_BUILTINS = frozenset({"int", "float", "len", "round", "abs", "min", "max", "sum", "pow", "divmod"})
# fill/clamp ops whose scalar argument is converted to the tensor's dtype with an overflow check
OVERFLOW_OPS = frozenset({"masked_fill", "masked_fill_", "fill_", "full", "full_like", "clamp", "clamp_", "clamp_min",
                          "clamp_max", "clip"})
# a value cast to a dtype the analysis cannot see (`x.to(get_dtype(m))`): unknown, but marked as
# deliberately aligned by its author (the marker survives shape ops, modules and helper calls)
CAST_UNKNOWN = Val("unknown", const="cast")


@dataclass(frozen=True)
class ModuleRef:
    """A submodule instance: its attribute text, class and whether it is kept fp32 when loaded."""

    text: str
    cls: str
    kept: str = ""  # why it is kept fp32 in the loaded regime ("" = not kept)
    row: int = 0
    col: int = 0
    filename: str = ""
    elem: str = ""  # element class of a ModuleList / Sequential
    chain: tuple[str, ...] = ()  # classes of an nn.Sequential in call order
    path: str = ""  # attribute path inside the model (``DenseReluDense.wo``), matched by keep lists
    explicit: str = ""  # the instance itself was built in float32 (dtype= / .float()): why
    alts: tuple[str, ...] = ()  # other classes `__init__` may choose (`A(...) if flag else B(...)`)

    def element(self) -> "ModuleRef | None":
        if not self.elem:
            return None
        return ModuleRef(f"{self.text}[i]", self.elem, self.kept, self.row, self.col, self.filename,
                         path=f"{self.path}.0", explicit=self.explicit)


@dataclass(frozen=True)
class FuncRef:
    node: Any
    cls: Any = None  # ClassFacts of the method's class


@dataclass
class RawFinding:
    code: str
    regime: str
    node: ast.AST
    sink: str
    message: str  # with {regimes} placeholder
    prov: tuple[Step, ...]
    sink_step: str
    fix: Any = None  # (applicability, title, [(node, kind, text)])
    fn_id: int = 0  # the function whose body holds the sink
    default: bool = True  # found with assumed (default) arguments rather than a caller's


@dataclass
class Operand:
    label: str
    val: Val
    node: ast.AST | None


class FileAnalysis:
    """Everything known about one file, shared by all frames of all regimes."""

    def __init__(self, tree: ast.Module, text: str, filename: str, module_name: str, settings, index=None,
                 is_package: bool = False):
        self.tree = tree
        self.text = text
        self.filename = filename
        self.module_name = module_name
        self.settings = settings
        self.index = index
        self.api = load_api()
        self.names = Names(tree, module_name, is_package)
        self.lines = re.split(r"\r\n|\r|\n", text)
        self.compute = getattr(settings, "compute_dtype", "float16") if settings is not None else "float16"
        self.classes: dict[str, tuple[ast.ClassDef, ClassFacts]] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        from dtypelint.analysis.module_facts import class_facts

        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = (node, class_facts(node, self.names, filename))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
        self.keep, self.keep_strict = self._keep_lists()
        self.user_sinks: dict[str, SinkDef] = {}
        for s in getattr(settings, "sinks", ()) or ():
            self.user_sinks[s.name] = SinkDef(s.name, s.contract, s.args, s.positions)
        self.findings: list[RawFinding] = []
        self.called: set[tuple[str, int]] = set()
        # (regime, sink node) evaluated with every operand's dtype known and compatible somewhere
        self.clean: set[tuple[str, int]] = set()
        self.collectors: list[list[RawFinding]] = []  # findings made inside active calls (for the memo)
        self.memo: dict[Any, Val] = {}
        self.strict_cache: dict[int, tuple[str, ...]] = {}
        self._assign_cache: dict[int, dict[str, list[ast.AST]]] = {}

    # -- class facts and the keep lists -------------------------------------------------
    def class_by_qname(self, qname: str) -> tuple[ast.ClassDef | None, ClassFacts | None]:
        short = qname.rsplit(".", 1)[-1]
        local = self.classes.get(short)
        if local is not None and (qname == local[1].qname or qname == short):
            return local
        if self.index is not None:
            entry = self.index.get(qname)
            if isinstance(entry, ClassFacts):
                return None, entry
        return None, None

    def ancestors(self, facts: ClassFacts, depth: int = 0) -> list[ClassFacts]:
        out = [facts]
        if depth > 6:
            return out
        for b in facts.bases:
            _, bf = self.class_by_qname(b)
            if bf is not None and bf.qname != facts.qname:
                out.extend(self.ancestors(bf, depth + 1))
        return out

    def _keep_lists(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``_keep_in_fp32_modules`` of every class in this file, including inherited ones.

        The list sits on the pretrained-model class but matches parameter names of any
        submodule of the model (unanchored regex search, facts §2.7), so it applies file-wide.
        """
        keep: list[str] = []
        strict: list[str] = []
        self.keep_by_component = False
        for _, facts in self.classes.values():
            ancestors = self.ancestors(facts)
            if any(anc.keep or anc.keep_strict for anc in ancestors):
                # diffusers matches entries against exact name components (`name.split(".")`);
                # transformers 5.x uses an unanchored regex search (facts §2.7)
                if any(b.split(".")[0] == "diffusers" for anc in ancestors for b in anc.bases):
                    self.keep_by_component = True
            for anc in ancestors:
                keep.extend(anc.keep)
                strict.extend(anc.keep_strict)
        return tuple(dict.fromkeys(keep)), tuple(dict.fromkeys(strict))

    def kept_reason(self, name: str, is_module: bool) -> str:
        """Why attribute ``name`` is kept fp32 when loaded ('' when it is not)."""
        target = f"{name}.weight" if is_module else name
        lists = [("_keep_in_fp32_modules_strict", self.keep_strict)]
        if self.compute == "float16":
            lists.append(("_keep_in_fp32_modules", self.keep))
        for attr, entries in lists:
            for e in entries:
                if self.keep_by_component:
                    if e in target.split(".") or target.startswith(e + ".") or target == e:
                        return f"`{name}` matches `{attr}` entry {e!r}"
                    continue
                pat = re.escape(e).replace(r"\*", ".*")
                if re.search(pat, target):
                    return f"`{name}` matches `{attr}` entry {e!r}"
        return ""

    def maybe_kept(self, name: str, is_module: bool) -> bool:
        """An entry that names this parameter under a longer path (``mlp.gate.weight`` for a router
        analysed on its own, whose place in the model is not known): it may or may not be kept."""
        target = f"{name}.weight" if is_module else name
        lists = list(self.keep_strict) + (list(self.keep) if self.compute == "float16" else [])
        return any(e.endswith("." + target) or e.endswith("." + name) for e in lists)

    # -- positions ----------------------------------------------------------------------
    def col(self, row: int, byte_col: int) -> int:
        """1-based code-point column from ast's UTF-8 byte offset."""
        line = self.lines[row - 1] if 0 < row <= len(self.lines) else ""
        if line.isascii():
            return byte_col + 1
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")) + 1

    def start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self.col(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> tuple[int, int]:
        return node.end_lineno, self.col(node.end_lineno, node.end_col_offset)

    def step(self, node: ast.AST, message: str) -> Step:
        r, c = self.start(node)
        return Step(self.filename, r, c, message)

    def seg(self, node: ast.AST | None) -> str:
        if node is None:
            return "?"
        s = self.segment(node)
        if s is None:
            s = ast.unparse(node)
        s = " ".join(s.split())
        return s if len(s) <= 60 else s[:57] + "..."

    def assignments(self, fn: ast.AST) -> dict[str, list[ast.AST]]:
        """Local name -> the expressions assigned to it anywhere in ``fn`` (for data dependence)."""
        key = id(fn)
        if key not in self._assign_cache:
            out: dict[str, list[ast.AST]] = {}
            for node in ast.walk(fn):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        for nm in ast.walk(t):
                            if isinstance(nm, ast.Name):
                                out.setdefault(nm.id, []).append(node.value)
            self._assign_cache[key] = out
        return self._assign_cache[key]

    def segment(self, node: ast.AST) -> str | None:
        """Source text of a node (like ``ast.get_source_segment`` without re-splitting the file)."""
        try:
            r0, r1 = node.lineno - 1, node.end_lineno - 1
            c0, c1 = node.col_offset, node.end_col_offset
        except AttributeError:
            return None
        if r1 >= len(self.lines):
            return None
        if r0 == r1:
            return self.lines[r0].encode()[c0:c1].decode(errors="replace")
        first = self.lines[r0].encode()[c0:].decode(errors="replace")
        last = self.lines[r1].encode()[:c1].decode(errors="replace")
        return "\n".join([first] + self.lines[r0 + 1:r1] + [last])

    # -- strict callees -------------------------------------------------------------------
    def strict_params(self, fn: ast.FunctionDef) -> tuple[str, ...]:
        """Parameters whose dtypes the function asserts equal (it is a dtype-strict sink)."""
        key = id(fn)
        if key not in self.strict_cache:
            self.strict_cache[key] = strict_params_of(fn)
        return self.strict_cache[key]

    # -- running ------------------------------------------------------------------------
    def run(self, regimes: tuple[str, ...]) -> list[RawFinding]:
        for regime in regimes:
            for fn in self.functions.values():
                Frame(self, fn, None, regime, report=True).run_default()
            for cnode, facts in self.classes.values():
                for item in cnode.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name != "__init__":
                        Frame(self, item, facts, regime, report=True).run_default()
        # A function that is called in this file is judged with its callers' arguments: the
        # findings made with assumed arguments (tensor parameters = activations in the compute
        # dtype) are dropped for it when a caller's context shows the sink is fine (every operand
        # known and compatible), so a caller that passes float32 on purpose (a time embedding into
        # a module kept in float32) does not produce a finding; where callers pass only values the
        # analysis cannot follow, the entry-point judgement stands (equal-dtype sinks).
        kept = [f for f in self.findings if (f.regime, f.fn_id) not in self.called
                or (f.code in CONTEXT_CHECKED and (f.regime, id(f.node)) not in self.clean)]
        out: list[RawFinding] = []
        seen: set[tuple] = set()
        for f in kept:
            key = (f.code, f.regime, id(f.node))
            if key not in seen:
                seen.add(key)
                out.append(f)
        return out

    def record(self, f: RawFinding) -> None:
        self.findings.append(f)
        for c in self.collectors:
            c.append(f)


def strict_params_of(fn: ast.FunctionDef) -> tuple[str, ...]:
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    found: list[str] = []

    def dtype_names(cmp: ast.Compare) -> list[str] | None:
        out = []
        for e in [cmp.left] + list(cmp.comparators):
            if isinstance(e, ast.Attribute) and e.attr == "dtype" and isinstance(e.value, ast.Name) and e.value.id in params:
                out.append(e.value.id)
            else:
                return None
        return out

    for node in ast.walk(fn):
        tests = []
        if isinstance(node, ast.Assert):
            tests = [node.test]
        elif isinstance(node, ast.If) and node.body and isinstance(node.body[0], ast.Raise):
            tests = [node.test]
        for t in tests:
            while isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not):
                t = t.operand  # `if not (q.dtype == k.dtype): raise`
            parts = t.values if isinstance(t, ast.BoolOp) else [t]
            for p in parts:
                if isinstance(p, ast.Compare) and all(isinstance(o, (ast.Eq, ast.NotEq)) for o in p.ops):
                    ns = dtype_names(p)
                    if ns and len(set(ns)) >= 2:
                        found.extend(ns)
    return tuple(dict.fromkeys(found))


class Dead(Exception):
    pass


class Frame:
    """One function body in one regime."""

    def __init__(self, fa: FileAnalysis, fn: ast.FunctionDef, cls: ClassFacts | None, regime: str, report: bool,
                 ac: bool | None = None, self_kept: str = "", depth: int = 0, self_text: str = "self",
                 root: int | None = None, self_path: str = ""):
        self.fa = fa
        self.fn = fn
        self.cls = cls
        self.regime = regime
        self.report = report
        self.ac = (regime == "autocast") if ac is None else ac
        self.self_kept = self_kept  # this instance was built in float32 (applies to all its parameters)
        self.self_path = self_path  # attribute path of this instance inside the model
        self.depth = depth
        self.returns: list[Val] = []
        self.api = fa.api
        self.root = id(fn) if root is None else root  # the entry function this analysis started from
        self.self_text = self_text

    # -- entry points -------------------------------------------------------------------
    def param_names(self) -> list[ast.arg]:
        a = self.fn.args
        return list(a.posonlyargs) + list(a.args)

    def run_default(self) -> Val:
        env: dict[str, Val] = {}
        args = self.fn.args
        positional = list(args.posonlyargs) + list(args.args)
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        kwdefaults = list(args.kw_defaults)
        is_method = self.cls is not None and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in self.fn.decorator_list)
        for i, (a, d) in enumerate(list(zip(positional, defaults)) + list(zip(args.kwonlyargs, kwdefaults))):
            if i == 0 and is_method:
                env[a.arg] = Val("self")
                continue
            env[a.arg] = self.default_param(a, d)
        if args.vararg:
            env[args.vararg.arg] = UNKNOWN
        if args.kwarg:
            env[args.kwarg.arg] = UNKNOWN
        return self.run(env)

    def default_param(self, a: ast.arg, default: ast.AST | None) -> Val:
        """Tensor parameters are activations in the compute dtype (unless typed/named otherwise).

        Under autocast the activations a layer receives are a mix (a float32 residual stream fed by
        float32 embeddings, low-precision outputs of autocast ops), so there they are unknown: only
        dtypes derived from ops and parameters are claimed."""
        v = self._default_param(a, default)
        if v.kind == "low" and self.regime == "autocast":
            return UNKNOWN
        return v

    def _default_param(self, a: ast.arg, default: ast.AST | None) -> Val:
        ann = ast.unparse(a.annotation) if a.annotation is not None else ""
        if default is not None and isinstance(default, ast.Constant) and default.value is not None:
            if isinstance(default.value, bool):
                return Val("pybool", const=None)
            return Val("scalar", scalar_float=isinstance(default.value, float)) if isinstance(default.value, (int, float)) else UNKNOWN
        if ann:
            if "Tensor" in ann and "tuple" not in ann.lower() and "list" not in ann.lower() and "dict" not in ann.lower():
                if NON_ACTIVATION.search(a.arg):
                    return UNKNOWN
                return tensor("low")
            return UNKNOWN
        if default is not None and not (isinstance(default, ast.Constant) and default.value is None):
            return UNKNOWN
        if SCALAR_PARAM.match(a.arg):
            return SCALAR
        if NON_ACTIVATION.search(a.arg):
            return UNKNOWN
        return tensor("low")

    def run(self, env: dict[str, Val]) -> Val:
        try:
            self.block(self.fn.body, env)
        except Dead:
            pass
        if not self.returns:
            return NONE
        out = self.returns[0]
        for r in self.returns[1:]:
            out = join(out, r)
        return out

    # -- statements ---------------------------------------------------------------------
    def block(self, body: list[ast.stmt], env: dict[str, Val]) -> dict[str, Val]:
        """Run statements; raises Dead when the block always returns/raises."""
        for stmt in body:
            env = self.stmt(stmt, env)
        return env

    def branch(self, body: list[ast.stmt], env: dict[str, Val]) -> dict[str, Val] | None:
        try:
            return self.block(body, dict(env))
        except Dead:
            return None

    @staticmethod
    def join_envs(a: dict[str, Val] | None, b: dict[str, Val] | None) -> dict[str, Val] | None:
        if a is None:
            return b
        if b is None:
            return a
        out = dict(a)
        for k, v in b.items():
            out[k] = join(out[k], v) if k in out else v
        return out

    def stmt(self, s: ast.stmt, env: dict[str, Val]) -> dict[str, Val]:
        if isinstance(s, ast.Assign):
            v = self.eval(s.value, env)
            for t in s.targets:
                self.bind(t, v, env, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.bind(s.target, self.eval(s.value, env), env, s.value)
        elif isinstance(s, ast.AugAssign):
            cur = self.eval(s.target, env)
            rhs = self.eval(s.value, env)
            if isinstance(s.op, ast.MatMult):
                self.matmul_sink(s, [Operand(self.fa.seg(s.target), cur, s.target), Operand(self.fa.seg(s.value), rhs, s.value)], "@=")
            if not cur.is_tensor:
                # in-place on a tensor keeps its dtype (facts §2.2); otherwise it rebinds
                res = self.binop(s.op, cur, rhs, s, s.target, s.value)
                self.bind(s.target, res, env, None)
        elif isinstance(s, ast.Expr):
            self.eval(s.value, env)
        elif isinstance(s, ast.Return):
            self.returns.append(self.eval(s.value, env) if s.value is not None else NONE)
            raise Dead
        elif isinstance(s, ast.Raise):
            raise Dead
        elif isinstance(s, ast.If):
            c = self.cond(s.test, env)
            if c is True:
                return self.block(s.body, env)
            if c is False:
                return self.block(s.orelse, env)
            a = self.branch(s.body, self.refine(s.test, env, True))
            b = self.branch(s.orelse, self.refine(s.test, env, False))
            out = self.join_envs(a, b)
            if out is None:
                raise Dead
            return out
        elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            return self.loop(s, env)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            return self.with_block(s, env)
        elif isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            a = self.branch(s.body + s.orelse, env)
            out = a
            for h in s.handlers:
                out = self.join_envs(out, self.branch(h.body, env))
            if out is None:
                raise Dead
            if s.finalbody:
                out = self.block(s.finalbody, out)
            return out
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env[s.name] = Val("func", ref=FuncRef(s, None))
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Name):
                    env.pop(t.id, None)
        return env

    def loop(self, s: ast.stmt, env: dict[str, Val]) -> dict[str, Val]:
        if isinstance(s, ast.While):
            self.cond(s.test, env)
        elem = UNKNOWN
        if not isinstance(s, ast.While):
            it = self.eval(s.iter, env)
            elem = self.element(it)
        cur = dict(env)
        for _ in range(4):
            body_env = dict(cur)
            if not isinstance(s, ast.While):
                self.bind(s.target, elem, body_env, None)
            out = self.branch(s.body, body_env)
            new = self.join_envs(cur, out) or cur
            if new == cur:
                break
            cur = new
        if s.orelse:
            cur = self.block(s.orelse, cur)
        return cur

    def element(self, it: Val) -> Val:
        if it.kind == "tuple":
            out = None
            for x in it.items:
                out = x if out is None else join(out, x)
            return out or UNKNOWN
        if it.kind == "seq":
            return it.ref or UNKNOWN
        if it.kind == "module" and it.ref.element() is not None:
            return Val("module", ref=it.ref.element())
        if it.is_tensor:
            return it
        if it.kind == "scalar":
            return SCALAR
        return UNKNOWN

    def with_block(self, s: ast.With, env: dict[str, Val]) -> dict[str, Val]:
        saved = self.ac
        for item in s.items:
            ce = item.context_expr
            state = self.autocast_state(ce, env)
            if state is not None:
                self.ac = state
            else:
                self.eval(ce, env)
            if item.optional_vars is not None:
                self.bind(item.optional_vars, UNKNOWN, env, None)
        try:
            return self.block(s.body, env)
        finally:
            self.ac = saved

    def autocast_state(self, ce: ast.AST, env: dict[str, Val]) -> bool | None:
        if not isinstance(ce, ast.Call):
            return None
        q = self.qualify(ce.func, env)
        last = (q or "").rsplit(".", 1)[-1]
        if isinstance(ce.func, ast.Name) and not q:
            last = ce.func.id
        if not (q and (canonical_torch(q) in AUTOCAST_NAMES or q.endswith(".autocast"))) and not (
                "autocast" in last and any(k.arg in ("enabled", "dtype") for k in ce.keywords)):
            # also project wrappers named like autocast (`maybe_autocast(..., enabled=False)`)
            return None
        enabled = None
        dtype_node = None
        for k in ce.keywords:
            if k.arg == "enabled":
                enabled = k.value
            elif k.arg == "dtype":
                dtype_node = k.value
        if len(ce.args) >= 2 and dtype_node is None:
            dtype_node = ce.args[1]
        if len(ce.args) >= 3 and enabled is None:
            enabled = ce.args[2]
        if enabled is not None:
            if isinstance(enabled, ast.Constant) and enabled.value is False:
                return False
            if not (isinstance(enabled, ast.Constant) and enabled.value is True):
                return self.ac  # runtime-dependent: keep the surrounding state
        if dtype_node is not None:
            d = self.eval(dtype_node, env)
            if d.kind == "dtype" and d.const in ("fp32", "fp64"):
                return False  # unsupported autocast dtype: autocast disables itself
        return True

    # -- binding ------------------------------------------------------------------------
    def bind(self, target: ast.AST, v: Val, env: dict[str, Val], value_node: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = target.elts
            if v.kind == "tuple" and len(v.items) == len(elts) and not any(isinstance(e, ast.Starred) for e in elts):
                for e, item in zip(elts, v.items):
                    self.bind(e, item, env, None)
            else:
                elem = v if v.is_tensor else (v.ref if v.kind == "seq" and v.ref is not None else (
                    SCALAR if v.kind == "shape" else UNKNOWN))
                for e in elts:
                    self.bind(e.value if isinstance(e, ast.Starred) else e, elem if not isinstance(e, ast.Starred) else UNKNOWN, env, None)
        elif isinstance(target, ast.Attribute):
            key = self.attr_key(target)
            if key:
                env[key] = v
        elif isinstance(target, ast.Subscript):
            self.subscript_store(target, v, env, value_node)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, UNKNOWN, env, None)

    def attr_key(self, node: ast.Attribute) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return ".".join([node.id] + list(reversed(parts)))
        return None

    def subscript_store(self, target: ast.Subscript, v: Val, env: dict[str, Val], value_node) -> None:
        """``x[idx] = v``: with a tensor index this is index_put_ (equal dtypes, even under autocast)."""
        dest = self.eval(target.value, env)
        idx = self.eval(target.slice, env)
        idx_items = idx.items if idx.kind == "tuple" else (idx,)
        advanced = any(i.kind in ("int", "bool") and not i.zdim for i in idx_items) or isinstance(target.slice, ast.List)
        if advanced and dest.is_float and v.is_float and dest.kind != v.kind:
            self.index_finding(target, f"{self.fa.seg(target)} = ...", dest, v, target.value, value_node,
                               "`x[idx] = v` with a tensor index is `index_put_`")

    # -- conditions ---------------------------------------------------------------------
    def refine(self, test: ast.AST, env: dict[str, Val], branch: bool) -> dict[str, Val]:
        """Narrow dtypes on a branch: after ``if x.dtype != w.dtype: ...`` the else branch knows
        ``x`` has ``w``'s dtype (the T5 ``wo`` guard, ``if q.dtype != v.dtype: q = q.to(v.dtype)``)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.refine(test.operand, env, not branch)
        if isinstance(test, ast.BoolOp):
            parts = test.values
            if isinstance(test.op, ast.And) == branch:
                # all parts hold (And/True) or all fail (Or/False)
                for p in parts:
                    env = self.refine(p, env, branch)
                return env
            undecided = [p for p in parts if self.cond(p, dict(env)) is not (not branch)]
            if len(undecided) == 1:
                return self.refine(undecided[0], env, branch)
            return env
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq)):
            equal = isinstance(test.ops[0], ast.Eq) == branch
            if not equal:
                return env
            for x_node, y_node in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
                if isinstance(x_node, ast.Attribute) and x_node.attr == "dtype":
                    target = x_node.value
                    key = target.id if isinstance(target, ast.Name) else (
                        self.attr_key(target) if isinstance(target, ast.Attribute) else None)
                    if key is None or (key not in env and not key.startswith("self.")):
                        continue
                    cur = self.eval(target, env)
                    other = self.eval(y_node, env)
                    if other.kind == "dtype" and other.const in ("low", "olp", "fp32", "fp64") and (
                            cur.is_float or cur.kind == "unknown"):
                        if cur.kind == other.const:
                            return env
                        env = dict(env)
                        env[key] = tensor(other.const, other.prov, zdim=cur.zdim, kept=other.kept)
                        return env
        return env

    def cond(self, test: ast.AST, env: dict[str, Val]) -> bool | None:
        v = self.eval(test, env)
        if v.kind == "pybool":
            return v.const
        if v.kind == "none":
            return False
        return None

    # -- expressions --------------------------------------------------------------------
    def qualify(self, node: ast.AST, env: dict[str, Val]) -> str | None:
        head = node
        while isinstance(head, ast.Attribute):
            head = head.value
        if isinstance(head, ast.Name) and head.id in env:
            return None
        q = self.fa.names.qualify(node)
        return canonical_torch(q) if q else None

    def eval(self, node: ast.AST | None, env: dict[str, Val]) -> Val:
        if node is None:
            return NONE
        m = getattr(self, "e_" + type(node).__name__, None)
        if m is None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child, env)
            return UNKNOWN
        return m(node, env)

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
        if n.id in self.fa.functions:
            return Val("func", ref=FuncRef(self.fa.functions[n.id], None))
        if n.id in ("True", "False"):
            return Val("pybool", const=n.id == "True")
        return UNKNOWN

    def e_Tuple(self, n, env) -> Val:
        return Val("tuple", items=tuple(self.eval(e, env) for e in n.elts))

    e_List = e_Tuple

    def e_ListComp(self, n, env) -> Val:
        local = dict(env)
        for g in n.generators:
            it = self.eval(g.iter, local)
            self.bind(g.target, self.element(it), local, None)
            for cond in g.ifs:
                self.eval(cond, local)
        return Val("seq", ref=self.eval(n.elt, local))

    e_GeneratorExp = e_ListComp
    e_SetComp = e_ListComp

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
        return join(self.eval(n.body, env), self.eval(n.orelse, env))

    def e_UnaryOp(self, n: ast.UnaryOp, env) -> Val:
        v = self.eval(n.operand, env)
        if isinstance(n.op, ast.Not):
            if v.kind == "pybool" and v.const is not None:
                return Val("pybool", const=not v.const)
            if v.kind == "none":
                return Val("pybool", const=True)
            return Val("pybool", const=None) if not v.is_tensor else tensor("bool")
        return v

    def e_BoolOp(self, n: ast.BoolOp, env) -> Val:
        vals = [self.eval(v, env) for v in n.values]
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
        out = vals[0]
        for v in vals[1:]:
            out = join(out, v)
        return out

    def e_Compare(self, n: ast.Compare, env) -> Val:
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
            elif b.kind == "none" and a.kind in ("module", "scalar", "dtype", "str", "tuple", "func"):
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
                return dtype_val(base.kind, base.prov)
            if a in ("T", "mT", "H", "mH", "data", "real"):
                return base
            if a == "shape":
                return SHAPE
            if a == "ndim":
                return SCALAR
            if a in ("device", "is_cuda", "requires_grad"):
                return UNKNOWN
            return UNKNOWN
        if base.kind == "tuple" and a in ("values", "indices") and len(base.items) == 2:
            return base.items[0 if a == "values" else 1]  # torch.return_types (max, topk, sort, ...)
        if base.kind == "dtype" and a in ("is_floating_point",):
            return UNKNOWN
        return UNKNOWN

    def dtype_kind(self, name: str) -> str:
        if name in ("float16", "bfloat16"):
            return "low" if name == self.fa.compute else "olp"
        return name

    def e_Subscript(self, n: ast.Subscript, env) -> Val:
        base = self.eval(n.value, env)
        idx = self.eval(n.slice, env)
        if base.is_tensor or base is CAST_UNKNOWN or (base.kind == "unknown" and base.const == "cast"):
            return base
        if base.kind == "tuple":
            if isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, int):
                i = n.slice.value
                if -len(base.items) <= i < len(base.items):
                    return base.items[i]
                return UNKNOWN
            return self.element(base)
        if base.kind == "seq":
            return base.ref or UNKNOWN
        if base.kind == "module" and base.ref.element() is not None:
            return Val("module", ref=base.ref.element())
        if base.kind == "shape":
            return SHAPE if isinstance(n.slice, ast.Slice) else SCALAR
        return UNKNOWN

    def e_Slice(self, n, env) -> Val:
        for p in (n.lower, n.upper, n.step):
            if p is not None:
                self.eval(p, env)
        return Val("slice")

    def e_BinOp(self, n: ast.BinOp, env) -> Val:
        a = self.eval(n.left, env)
        b = self.eval(n.right, env)
        return self.binop(n.op, a, b, n, n.left, n.right)

    def binop(self, op, a: Val, b: Val, n: ast.AST, ln: ast.AST | None, rn: ast.AST | None) -> Val:
        if isinstance(op, ast.MatMult):
            operands = [Operand(self.fa.seg(ln), a, ln), Operand(self.fa.seg(rn), b, rn)]
            self.matmul_sink(n, operands, "@")
            if self.ac and (a.is_float or a.kind == "unknown") and (b.is_float or b.kind == "unknown"):
                return tensor("low")
            return self.after_sink([a, b])
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
        res, winner = promote([a, b])
        if res is None:
            return CAST_UNKNOWN if any(v.kind == "unknown" and v.const == "cast" for v in (a, b)) else UNKNOWN
        if isinstance(op, ast.Add) and self.residual_check(n, a, b, ln, rn):
            # reported: continue with the residual's dtype, as if the fix were applied
            return a if a.kind in ("low", "olp") else b
        return self.promotion_step(res, [a, b], n, {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}.get(type(op), "operator"))

    def promotion_step(self, res: Val, inputs: list[Val], n: ast.AST, what: str) -> Val:
        if res.kind in ("fp32", "fp64") and any(v.is_float and not v.zdim and v.kind in ("low", "olp") for v in inputs):
            dn = dtype_name(res.kind, self.fa.compute)
            return res.with_step(self.fa.step(n, f"`{what}` promotes the {self.fa.compute} operand to {dn} (type promotion to the widest input)"))
        return res

    def e_Call(self, n: ast.Call, env) -> Val:
        args = [self.eval(a, env) for a in n.args]
        kwargs = {k.arg: self.eval(k.value, env) for k in n.keywords if k.arg}
        for k in n.keywords:
            if not k.arg:
                self.eval(k.value, env)
        f = n.func
        if isinstance(f, ast.Name) and f.id in SCALAR_BUILTINS and f.id not in env and f.id not in self.fa.functions:
            if all(v.kind in ("scalar", "shape", "pybool") for v in args) or f.id in ("int", "float", "len", "round"):
                return Val("scalar", scalar_float=f.id == "float")
        if isinstance(f, ast.Name) and f.id == "isinstance" and f.id not in env and len(n.args) == 2:
            t = self.qualify(n.args[1], env)
            if args[0].is_tensor and t in ("torch.Tensor", "torch.nn.Parameter"):
                return Val("pybool", const=True)
            return Val("pybool", const=None)
        # 1. qualified (module-level) callee
        q = self.qualify(f, env)
        if q:
            return self.call_qualified(q, n, args, kwargs, env)
        if isinstance(f, ast.Attribute):
            recv = self.eval(f.value, env)
            return self.call_method(recv, f.attr, n, args, kwargs, env)
        fv = self.eval(f, env)
        if fv.kind == "func":
            return self.call_function(fv.ref.node, fv.ref.cls, n, args, kwargs, recv_self=None)
        if fv.kind == "module":
            return self.call_module(fv.ref, n, args, kwargs)
        return UNKNOWN

    # -- calls ----------------------------------------------------------------------------
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
            if sink.contract == "matmul" and not self.ac:
                return self.after_sink([v for v in args if v.is_tensor or v.kind == "unknown"])
            if sink.contract in ("matmul", "sdpa") and self.ac:
                return tensor("low")
            return self.after_sink([v for v in args if v.is_tensor or v.kind == "unknown"])
        if q.startswith("torch."):
            if q in ("torch.finfo", "torch.iinfo"):
                return UNKNOWN
            op = api.torch_op(q)
            if op is not None:
                recv = args[0] if args else None
                return self.apply_op(op, recv, args[1:], kwargs, n, self.short(q), function=True)
            return UNKNOWN
        # project functions and classes
        local_name = q[len(self.fa.module_name) + 1:] if self.fa.module_name and q.startswith(self.fa.module_name + ".") else None
        if local_name and local_name in self.fa.functions:
            return self.call_function(self.fa.functions[local_name], None, n, args, kwargs, recv_self=None)
        if local_name and local_name in self.fa.classes:
            return UNKNOWN
        if self.fa.index is not None:
            entry = self.fa.index.get(q)
            from dtypelint.analysis.summaries import FuncSummary

            if isinstance(entry, FuncSummary):
                return self.call_summary(entry, n, args, kwargs)
        return UNKNOWN

    def user_sink_by_short(self, q: str) -> SinkDef | None:
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

    def call_method(self, recv: Val, meth: str, n: ast.Call, args, kwargs, env) -> Val:
        if recv.kind == "self":
            if self.cls is not None:
                key = f"self.{meth}"
                av = env.get(key) or self.self_attr(meth, n.func)
                if av.kind == "module":
                    return self.call_module(av.ref, n, args, kwargs)
                node = self.method_node(self.cls, meth)
                if node is not None:
                    return self.call_function(node, self.cls, n, args, kwargs, recv_self=("self", self.self_kept, self.self_path))
            return UNKNOWN
        if recv.kind == "module":
            if meth == "forward":
                return self.call_module(recv.ref, n, args, kwargs)
            if meth in ("float", "half", "to", "bfloat16", "cuda", "eval", "train"):
                return recv
            cls_node, facts = self.fa.class_by_qname(recv.ref.cls)
            if facts is not None:
                node = self.method_node(facts, meth)
                if node is not None:
                    return self.call_function(node, facts, n, args, kwargs, recv_self=(recv.ref.text, recv.ref.explicit, recv.ref.path))
            return UNKNOWN
        if recv.kind == "func" or recv.kind == "qname":
            return UNKNOWN
        if recv.kind == "unknown" and recv.const == "cast":
            if meth in self.api.keep:
                return recv
            if meth in self.api.split:
                return Val("seq", ref=recv)
        if recv.is_tensor or recv.kind == "unknown" or recv.kind == "none":
            if recv.kind != "unknown" or meth in self.api.casts or meth in ("to", "type_as", "type", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor") or meth in INDEX_FAMILY:
                return self.apply_op(meth, recv if recv.kind != "none" else UNKNOWN, args, kwargs, n, "." + meth, function=False)
        if recv.kind == "tuple" and meth in ("index", "count"):
            return SCALAR
        return UNKNOWN

    def method_node(self, facts: ClassFacts, meth: str) -> ast.FunctionDef | None:
        for anc in self.fa.ancestors(facts):
            cnode, _ = self.fa.class_by_qname(anc.qname)
            if cnode is None:
                continue
            for item in cnode.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == meth:
                    return item
        return None

    def bind_args(self, fn: ast.FunctionDef, args: list[Val], kwargs: dict[str, Val], skip_self: bool,
                  opaque: bool = False) -> dict[str, Val]:
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
                env[p.arg] = self.eval(d, {}) if d is not None and not opaque else UNKNOWN
                continue
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            env[p.arg] = kwargs.get(p.arg, self.eval(d, {}) if d is not None and not opaque else UNKNOWN)
        if a.vararg:
            env[a.vararg.arg] = Val("tuple", items=tuple(args[len(positional):]))
        if a.kwarg:
            env[a.kwarg.arg] = UNKNOWN
        return env

    def call_function(self, fn: ast.FunctionDef, cls: ClassFacts | None, n: ast.Call, args, kwargs,
                      recv_self: tuple[str, str, str] | None) -> Val:
        opaque = any(isinstance(a, ast.Starred) for a in n.args) or any(k.arg is None for k in n.keywords)
        if opaque and any(isinstance(a, ast.Starred) for a in n.args):
            args = [v for v, a in zip(args, n.args) if not isinstance(a, ast.Starred)][:sum(
                1 for _ in itertools.takewhile(lambda a: not isinstance(a, ast.Starred), n.args))]
        env = self.bind_args(fn, args, kwargs, skip_self=recv_self is not None, opaque=opaque)
        strict = self.fa.strict_params(fn)
        if strict:
            ops = [Operand(p, env[p], self.arg_node(fn, n, p, recv_self is not None)) for p in strict if p in env]
            self.equal_sink(n, ops, f"{fn.name}()", "DTL102",
                            f"which asserts that {', '.join('`'+o.label+'`' for o in ops)} have equal dtypes",
                            sink_step=f"reaches `{fn.name}()`, whose body asserts equal dtypes of {', '.join(strict)}")
        self.fa.called.add((self.regime, id(fn)))
        if self.depth >= MAX_DEPTH:
            return UNKNOWN
        if recv_self is not None:
            env[(fn.args.posonlyargs + fn.args.args)[0].arg if (fn.args.posonlyargs + fn.args.args) else "self"] = Val("self")
        key = (id(fn), self.regime, self.ac, recv_self, tuple(sorted((k, v.kind, v.zdim) for k, v in env.items())))
        if key in self.fa.memo:
            r, found = self.fa.memo[key]
            if self.report:
                for f in found:
                    self.fa.record(replace(f, fn_id=self.root))
            return r
        self.fa.memo[key] = (UNKNOWN, [])  # recursion guard
        sub = Frame(self.fa, fn, cls, self.regime, report=self.report, ac=self.ac,
                    self_kept=recv_self[1] if recv_self else "", depth=self.depth + 1,
                    self_text=recv_self[0] if recv_self else "self", root=self.root,
                    self_path=recv_self[2] if recv_self else "")
        collected: list[RawFinding] = []
        self.fa.collectors.append(collected)
        try:
            r = sub.run(env)
        finally:
            self.fa.collectors.pop()
        if r.is_float and r.kind in ("fp32", "fp64") and any(
                v.is_float and v.kind in ("low", "olp") for v in env.values()):
            r = r.with_step(self.fa.step(n, f"`{self.fa.seg(n.func)}(...)` returns {dtype_name(r.kind, self.fa.compute)}"))
        r = self.keep_cast_marker(r, list(args) + list(kwargs.values()))
        self.fa.memo[key] = (r, collected)
        return r

    def arg_node(self, fn: ast.FunctionDef, n: ast.Call, pname: str, skip_self: bool) -> ast.AST | None:
        positional = [p.arg for p in fn.args.posonlyargs + fn.args.args]
        if skip_self and positional:
            positional = positional[1:]
        if pname in positional:
            i = positional.index(pname)
            if i < len(n.args) and not isinstance(n.args[i], ast.Starred):
                return n.args[i]
        for k in n.keywords:
            if k.arg == pname:
                return k.value
        return None

    def call_summary(self, s, n: ast.Call, args, kwargs) -> Val:
        from dtypelint.analysis.summaries import apply_summary

        if s.strict:
            ops = []
            for p in s.strict:
                i = s.params.index(p) if p in s.params else -1
                node = n.args[i] if 0 <= i < len(n.args) else next((k.value for k in n.keywords if k.arg == p), None)
                v = args[i] if 0 <= i < len(args) else kwargs.get(p, UNKNOWN)
                ops.append(Operand(p, v, node))
            name = s.qname.rsplit(".", 1)[-1]
            self.equal_sink(n, ops, f"{name}()", "DTL102",
                            f"which asserts that {', '.join('`'+o.label+'`' for o in ops)} have equal dtypes",
                            sink_step=f"reaches `{name}()` ({s.filename}), whose body asserts equal dtypes of {', '.join(s.strict)}")
        return apply_summary(s, self, n, args, kwargs)

    # -- modules --------------------------------------------------------------------------
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
            if self.method_node(self.cls, a) is not None:
                return Val("func", ref=FuncRef(self.method_node(self.cls, a), self.cls))
            return UNKNOWN
        text = f"{self.self_text}.{a}"
        if fact.kind == "module":
            kept = explicit = ""
            path = f"{self.self_path}.{a}" if self.self_path else a
            if self.regime == "loaded":
                explicit = self.self_kept
                if not explicit and fact.fp32:
                    explicit = f"`{text}` is built with `dtype=torch.float32` / `.float()` in `__init__`"
                kept = explicit or (self.fa.kept_reason(path, True) if fact.cls.startswith("torch.nn.") else "")
            return Val("module", ref=ModuleRef(text, fact.cls, kept, fact.row, fact.col, fact.filename or self.fa.filename,
                                               fact.elem, fact.chain, path, explicit, fact.alts))
        if fact.kind in ("param", "buffer", "tensor"):
            return self.tensor_attr(fact, text)
        if fact.kind == "scalar":
            return SCALAR
        if fact.kind == "none":
            return NONE
        return UNKNOWN

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

        if fact.kind == "tensor":
            if d == "fp32" or d == "fp64":
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
        reason = self.self_kept or self.fa.kept_reason(path, False)
        if reason:
            return src(f"kept in float32 when loaded ({reason})")
        if self.fa.maybe_kept(path, False):
            return UNKNOWN
        if fact.fp32 or d == "fp64":
            return src("it is created with an explicit float32 dtype / `.float()` in `__init__`, which loading keeps")
        return tensor("low", zdim=zdim)

    def module_param(self, ref: ModuleRef, pname: str, n: ast.AST) -> Val:
        cls_node, facts = self.fa.class_by_qname(ref.cls)
        if facts is not None:
            fact = next((f for anc in self.fa.ancestors(facts) for f in anc.attrs if f.name == pname), None)
            if fact is not None and fact.kind in ("param", "buffer", "tensor"):
                sub = Frame(self.fa, self.fn, facts, self.regime, report=False, self_kept=ref.explicit,
                            self_text=ref.text, self_path=ref.path)
                return sub.tensor_attr(fact, f"{ref.text}")
        if not ref.cls.startswith("torch.nn."):
            return UNKNOWN
        text = f"{ref.text}.{pname}"
        if self.regime == "autocast":
            msg = f"`{text}` is a float32 parameter in the autocast regime (parameters stay float32 under autocast)"
            return tensor("fp32", (Step(ref.filename, ref.row, ref.col, msg),))
        if self.regime == "loaded" and ref.kept:
            msg = f"`{text}` is float32 in the loaded regime: {ref.kept}"
            return tensor("fp32", (Step(ref.filename, ref.row, ref.col, msg),), kept=ref.text)
        if self.regime == "loaded" and self.fa.maybe_kept(ref.path, True):
            return UNKNOWN
        return tensor("low")

    def submodule_attr(self, ref: ModuleRef, a: str, n: ast.AST) -> Val:
        cls_node, facts = self.fa.class_by_qname(ref.cls)
        if facts is None:
            return UNKNOWN
        sub = Frame(self.fa, self.fn, facts, self.regime, report=False, self_kept=ref.explicit, self_text=ref.text,
                    self_path=ref.path)
        return sub.self_attr(a, n)

    def call_module(self, ref: ModuleRef, n: ast.Call, args, kwargs) -> Val:
        return self.keep_cast_marker(self._call_module(ref, n, args, kwargs), list(args) + list(kwargs.values()))

    @staticmethod
    def keep_cast_marker(r: Val, inputs: list[Val]) -> Val:
        """An unknown result computed from a value its author cast to an unseen dtype stays marked."""
        if r.kind == "unknown" and r.const != "cast" and any(
                v is not None and v.kind == "unknown" and v.const == "cast" for v in inputs):
            return CAST_UNKNOWN
        return r

    def _call_module(self, ref: ModuleRef, n: ast.Call, args, kwargs) -> Val:
        if ref.alts:
            # one of several classes: the output of each, joined like the branches of an if
            out = self._call_module(replace(ref, alts=()), n, args, kwargs)
            for c in ref.alts:
                kept = ref.explicit or (self.fa.kept_reason(ref.path, True) if self.regime == "loaded" and c.startswith("torch.nn.") else "")
                out = join(out, self._call_module(replace(ref, cls=c, alts=(), kept=kept), n, args, kwargs))
            return out
        x = args[0] if args else next(iter(kwargs.values()), UNKNOWN)
        if ref.cls.startswith("torch.nn."):
            kind = self.api.module_kind.get(ref.cls[len("torch.nn."):])
            cname = "nn." + ref.cls[len("torch.nn."):]
            if kind == "linear":
                w = self.module_param(ref, "weight", n)
                if not self.ac:
                    self.matmul_sink(n, [Operand(self.fa.seg(n.args[0]) if n.args else "input", x, n.args[0] if n.args else None),
                                         Operand(f"{ref.text}.weight", w, None)], f"{ref.text}(...)", module=cname)
                    if x.is_float and w.is_float:
                        # on a mismatch (reported) continue in the lower precision, so one bug gives one finding
                        out = x if x.kind in ("low", "olp") or w.kind == x.kind else w
                        if w.kind == x.kind and w.kind in ("fp32", "fp64") and ref.kept:
                            return replace(x, kept=ref.text).with_step(self.fa.step(n, f"`{ref.text}` is kept in float32 in the loaded regime, so its output is float32"))
                        return out
                    return x if x.is_float else UNKNOWN
                return tensor("low") if (x.is_float or x.kind == "unknown") else UNKNOWN
            if kind == "norm_fp32":
                if self.ac and (x.is_float or x.kind == "unknown"):
                    return tensor("fp32", x.prov + (self.fa.step(n, f"`{cname}` runs in float32 under CUDA autocast (layer_norm/group_norm/rms_norm are on its fp32 list)"),))
                return x if x.is_float else UNKNOWN
            if kind == "softmax":
                if self.ac and x.is_float:
                    return tensor("fp32", x.prov + (self.fa.step(n, f"`{cname}` runs in float32 under CUDA autocast"),))
                return x
            if kind == "keep":
                return x
            if kind == "embedding":
                return self.module_param(ref, "weight", n)
            if ref.chain and ref.cls == "torch.nn.Sequential":
                out = x
                for i, c in enumerate(ref.chain):
                    sub_path = f"{ref.path}.{i}"
                    sub_kept = ref.explicit or (self.fa.kept_reason(sub_path, True) if self.regime == "loaded" else "")
                    sub = ModuleRef(f"{ref.text}[{i}]", c, sub_kept, ref.row, ref.col, ref.filename,
                                    path=sub_path, explicit=ref.explicit)
                    out = self.call_module(sub, n, [out], {})
                return out
            return UNKNOWN
        cls_node, facts = self.fa.class_by_qname(ref.cls)
        if facts is None:
            return UNKNOWN
        fwd = self.method_node(facts, "forward")
        if fwd is None and facts is not None and any(b.endswith("Sequential") for b in facts.bases):
            return UNKNOWN
        if fwd is not None:
            return self.call_function(fwd, facts, n, args, kwargs, recv_self=(ref.text, ref.explicit, ref.path))
        if self.fa.index is not None:
            from dtypelint.analysis.summaries import FuncSummary

            entry = self.fa.index.get(facts.qname + ".forward")
            if isinstance(entry, FuncSummary):
                return self.call_summary(entry, n, args, kwargs)
        return UNKNOWN

    # -- torch ops ------------------------------------------------------------------------
    def explicit_dtype(self, kwargs: dict[str, Val]) -> Val | None:
        d = kwargs.get("dtype")
        if d is not None and d.kind == "dtype":
            return d
        return None

    def apply_op(self, op: str, recv: Val | None, args: list[Val], kwargs: dict[str, Val], n: ast.Call,
                 opname: str, function: bool) -> Val:
        r = self._apply_op(op, recv, args, kwargs, n, opname, function)
        if op in ("to", "type", "type_as") or op in self.api.casts:
            return r
        return self.keep_cast_marker(r, [recv] + list(args) + list(kwargs.values()))

    def _apply_op(self, op: str, recv: Val | None, args: list[Val], kwargs: dict[str, Val], n: ast.Call,
                  opname: str, function: bool) -> Val:
        api = self.api
        fa = self.fa
        cd = fa.compute
        all_in = ([recv] if recv is not None else []) + list(args)
        x = recv if recv is not None else UNKNOWN
        if op in OVERFLOW_OPS:
            self.overflow_check(op, x if not function or op not in ("full",) else None, args, kwargs, n, function)
        # index family: equal dtypes even under autocast (facts §3)
        if op in INDEX_FAMILY and not function and isinstance(n.func, ast.Attribute):
            src_i, raises_under_ac = INDEX_FAMILY[op]
            src = args[src_i] if src_i < len(args) else kwargs.get("source", kwargs.get("src", kwargs.get("values", kwargs.get("end", UNKNOWN))))
            src_node = n.args[src_i] if src_i < len(n.args) else next((k.value for k in n.keywords if k.arg in ("source", "src", "values", "end")), None)
            if (raises_under_ac or not self.ac) and x.is_float and src.is_float and x.kind != src.kind and not (op.startswith("lerp") and src.zdim):
                self.index_finding(n, f"{fa.seg(n.func)}(...)", x, src, n.func.value, src_node, f"`{op}`")
            if op.endswith("_"):
                return x
            if self.ac and op in ("index_put", "scatter_add"):
                res, _ = promote([x, src])
                return res or x
            return x
        # casts
        if op in api.casts:
            c = api.casts[op]
            kind = self.dtype_kind(c) if c in ("float16", "bfloat16") else c
            if kind in ("fp32", "fp64"):
                return tensor(kind, x.prov + (fa.step(n, f"`{fa.seg(n.func)}()` casts to {dtype_name(kind, cd)}"),), zdim=x.zdim)
            return tensor(kind, zdim=x.zdim)
        if op in ("to", "type"):
            target = None
            for v in list(args) + [kwargs.get("dtype", UNKNOWN)]:
                if v.kind == "dtype":
                    target = v
                    break
                if v.is_tensor and op == "to":
                    target = dtype_val(v.kind, v.prov)
                    break
            if target is None:
                if "dtype" in kwargs:
                    return CAST_UNKNOWN
                if any(v.kind == "unknown" for v in args) and not any(k == "device" for k in kwargs) and args:
                    # `.to(something)`: could be a dtype we cannot see
                    a0 = n.args[0] if n.args else None
                    if a0 is not None and isinstance(a0, ast.Attribute) and a0.attr in ("device",):
                        return x
                    return CAST_UNKNOWN if not (a0 is not None and "device" in fa.seg(a0)) else x
                return x
            if target.const is None:
                return CAST_UNKNOWN
            kind = target.const
            if kind in ("fp32", "fp64"):
                if x.kind == kind:
                    return x
                return tensor(kind, target.prov + (fa.step(n, f"`{fa.seg(n)}` casts to {dtype_name(kind, cd)}"),), zdim=x.zdim, kept=target.kept)
            return tensor(kind, zdim=x.zdim)
        if op == "type_as":
            t = args[0] if args else UNKNOWN
            if t.is_tensor:
                if t.kind in ("fp32", "fp64") and x.kind != t.kind:
                    return tensor(t.kind, t.prov + (fa.step(n, f"`{fa.seg(n)}` casts to {dtype_name(t.kind, cd)}"),), zdim=x.zdim)
                return replace(t, zdim=x.zdim)
            return CAST_UNKNOWN
        ed = self.explicit_dtype(kwargs)
        if op in api.default_float or op in api.arange_like:
            if ed is not None:
                if ed.const in ("fp32", "fp64"):
                    return tensor(ed.const, ed.prov + (fa.step(n, f"`{fa.seg(n.func)}(..., dtype={dtype_name(ed.const, cd)})` allocates {dtype_name(ed.const, cd)}"),))
                return tensor(ed.const) if ed.const else UNKNOWN
            if "dtype" in kwargs:
                return UNKNOWN
            ins = ([recv] if recv is not None else []) + list(args)
            if op in api.arange_like or op == "full" or op == "tensor":
                vals = ins[1:2] if op == "full" else ins
                if op == "tensor":
                    v0 = ins[0] if ins else UNKNOWN
                    if v0.is_tensor:
                        return v0
                    if v0.kind == "scalar" and not v0.scalar_float:
                        return tensor("int", zdim=True)
                    if v0.kind == "pybool":
                        return tensor("bool", zdim=True)
                    zd = v0.kind == "scalar"
                    return tensor("fp32", (fa.step(n, f"`{fa.seg(n.func)}(...)` without `dtype=` creates a float32 tensor (the default dtype)"),), zdim=zd)
                if not any(v.kind == "scalar" and v.scalar_float for v in vals):
                    return tensor("int") if op != "full" else (UNKNOWN if not vals else tensor("int"))
            zd = op in ("zeros", "ones", "empty", "full", "rand", "randn") and self.is_empty_shape(n)
            return tensor("fp32", (fa.step(n, f"`{fa.seg(n.func)}(...)` without `dtype=` allocates float32 (the default dtype)"),), zdim=zd)
        if op in api.like:
            base = recv if recv is not None else UNKNOWN
            if ed is not None:
                return tensor(ed.const) if ed.const else UNKNOWN
            return base if base.is_tensor else UNKNOWN
        if op in api.new:
            if ed is not None:
                return tensor(ed.const) if ed.const else UNKNOWN
            return replace(x, zdim=False) if x.is_tensor else UNKNOWN
        if op in api.integer:
            return tensor("int")
        if op in api.boolean:
            return tensor("bool")
        # explicit dtype= wins (softmax(..., dtype=torch.float32), sum(dtype=...))
        if ed is not None and ed.const:
            if ed.const in ("fp32", "fp64"):
                return tensor(ed.const, (fa.step(n, f"`{fa.seg(n.func)}(..., dtype={dtype_name(ed.const, cd)})` returns {dtype_name(ed.const, cd)}"),))
            return tensor(ed.const)
        first = self.first_tensor(all_in)
        if self.ac:
            if op in api.ac_lp:
                return tensor("low") if first is None or first.is_float else first
            if op in api.ac_fp32 or op in api.ac_fp32_opt:
                if first is not None and first.is_float and first.kind != "fp64":
                    zd = op in api.ac_fp32_opt and self.reduces_all(n, function)
                    return tensor("fp32", first.prov + (fa.step(n, f"`{opname}` runs in float32 under CUDA autocast"),), zdim=zd)
                return first if first is not None else UNKNOWN
            if op in api.ac_promote:
                res, _ = promote([v for v in all_in if v.is_tensor])
                if res is None:
                    return UNKNOWN
                if res.kind in ("fp32", "fp64") and any(v.kind in ("low", "olp") for v in all_in if v.is_tensor and not v.zdim):
                    return res.with_step(fa.step(n, f"`{opname}` is an autocast \"promote\" op: it runs in the widest input dtype, float32"))
                return res
        if op in api.ac_fp32_opt or op in ("mean", "max", "min", "amax", "amin", "std", "var", "norm"):
            if first is not None and first.is_tensor and self.reduces_all(n, function) and op not in ("softmax", "log_softmax", "cumsum", "cumprod"):
                return replace(first, zdim=True)
        if op in api.values_indices:
            if first is None:
                return UNKNOWN
            if self.reduces_all(n, function):
                return replace(first, zdim=True)
            return Val("tuple", items=(first, tensor("int")))
        if op in api.split:
            if first is None:
                return UNKNOWN
            return Val("seq", ref=first)
        if op in api.binary:
            ins = []
            for v in all_in:
                if v.kind == "tuple":
                    ins.extend(v.items)
                elif v.kind == "seq":
                    ins.append(v.ref or UNKNOWN)
                else:
                    ins.append(v)
            if op == "where" and ins and ins[0].kind == "bool":
                ins = ins[1:]
            res, _ = promote(ins)
            if res is None:
                return CAST_UNKNOWN if any(v.kind == "unknown" and v.const == "cast" for v in ins) else UNKNOWN
            return self.promotion_step(res, ins, n, opname)
        if op in api.keep or op in api.ac_lp or op in api.ac_fp32 or op in api.ac_fp32_opt or op in api.ac_promote:
            if op in api.ac_promote or op in ("maximum", "minimum"):
                res, _ = promote([v for v in all_in if v.is_tensor])
                if res is not None:
                    return self.promotion_step(res, all_in, n, opname)
            return first if first is not None else UNKNOWN
        if op == "item" or op == "tolist" or op in ("numel", "dim", "element_size", "nelement"):
            return SCALAR
        if op == "size":
            return SHAPE if not args and not kwargs else SCALAR
        return UNKNOWN

    @staticmethod
    def is_empty_shape(n: ast.Call) -> bool:
        """``torch.zeros(())`` / ``torch.full((), v)``: a 0-dim tensor (never promotes)."""
        shape = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "size"), None)
        return isinstance(shape, (ast.Tuple, ast.List)) and not shape.elts

    @staticmethod
    def reduces_all(n: ast.Call, function: bool) -> bool:
        extra = len(n.args) - (1 if function else 0)
        return extra <= 0 and not any(k.arg in ("dim", "axis") for k in n.keywords)

    # -- sinks ----------------------------------------------------------------------------
    def matmul_sink(self, n: ast.AST, ops: list[Operand], sink: str, module: str | None = None) -> None:
        if self.ac:
            return
        what = f"`{sink}`" if module is None else f"`{sink}` ({module})"
        self.equal_sink(n, ops, sink, "DTL101", f"which requires equal dtypes outside autocast",
                        sink_step=f"reaches {what}, which requires equal dtypes outside autocast", module=module)

    def contract_sink(self, sink: SinkDef, n: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> None:
        ops: list[Operand] = []
        names = sink.args or tuple(f"arg{i}" for i in range(len(args)))
        positions = sink.positions or tuple(range(len(names)))
        for pname, pos in zip(names, positions):
            if pos < len(n.args) and not isinstance(n.args[pos], ast.Starred):
                ops.append(Operand(self.fa.seg(n.args[pos]), args[pos], n.args[pos]))
            else:
                for k in n.keywords:
                    if k.arg == pname:
                        ops.append(Operand(self.fa.seg(k.value), kwargs.get(pname, UNKNOWN), k.value))
        short = sink.name.rsplit(".", 1)[-1]
        if not sink.args and sink.contract == "matmul":
            ops = [Operand(self.fa.seg(a), v, a) for a, v in zip(n.args, args) if v.is_tensor or v.kind == "unknown"]
            if short == "einsum":
                ops = ops[:]  # operands after the equation string
        if sink.contract == "matmul":
            self.matmul_sink(n, ops, short)
        elif sink.contract == "sdpa":
            if not self.ac:
                self.equal_sink(n, ops, short, "DTL102", "which requires query, key and value to have the same dtype",
                                sink_step=f"reaches `{short}`, which requires query, key and value to have the same dtype (outside autocast)")
        elif sink.contract in ("equal", "equal-dtypes"):
            self.equal_sink(n, ops, short, "DTL102", "which requires equal dtypes (autocast does not cast its inputs)",
                            sink_step=f"reaches `{short}`, which requires equal dtypes; autocast does not cast its inputs")
        elif sink.contract == "half-only":
            self.half_only_sink(n, ops, short)

    def equal_sink(self, n: ast.AST, ops: list[Operand], sink: str, code: str, why: str, sink_step: str,
                   module: str | None = None) -> None:
        known = [o for o in ops if o.val.is_float and not o.val.zdim]
        kinds = {o.val.kind for o in known}
        if len(kinds) < 2:
            if ops and all(o.val.is_tensor or o.val.kind in ("scalar", "none") or o.val is CAST_UNKNOWN
                           or (o.val.kind == "unknown" and o.val.const == "cast") for o in ops):
                # every operand known (or deliberately cast by the author): the sink is fine here
                self.fa.clean.add((self.regime, id(n)))
            return
        wide = max(known, key=lambda o: (o.val.kind in ("fp32", "fp64"), o.val.kind == "fp64", len(o.val.prov)))
        low = [o for o in known if o.val.kind != wide.val.kind]
        partner = low[0]
        fa = self.fa
        cd = fa.compute
        wn = dtype_name(wide.val.kind, cd)
        pn = dtype_name(partner.val.kind, cd)
        msg = (f"`{wide.label}` ({wn}) and `{partner.label}` ({pn}) reach `{sink}` in the {{regimes}}, {why}")
        fix = self.cast_fix([o for o in known if o.val.kind == wide.val.kind], partner, code, module)
        self.emit(code, n, sink, msg, wide.val.prov, sink_step, fix)

    def half_only_sink(self, n: ast.AST, ops: list[Operand], sink: str) -> None:
        wide = [o for o in ops if o.val.kind in ("fp32", "fp64") and not o.val.zdim]
        if not wide:
            if ops and all(o.val.is_tensor or o.val.kind in ("scalar", "none") for o in ops):
                self.fa.clean.add((self.regime, id(n)))
            return
        lows = [o for o in ops if o.val.kind in ("low", "olp")]
        w = max(wide, key=lambda o: len(o.val.prov))
        wn = dtype_name(w.val.kind, self.fa.compute)
        labels = ", ".join(f"`{o.label}`" for o in wide)
        msg = (f"{labels} {'is' if len(wide) == 1 else 'are'} {wn} at `{sink}` in the {{regimes}}, which accepts only "
               f"float16/bfloat16 inputs of one dtype (autocast does not cast its inputs)")
        fix = self.cast_fix(wide, lows[0], "DTL103", None) if lows else None
        self.emit("DTL103", n, sink, msg, w.val.prov,
                  f"reaches `{sink}`, which accepts only float16/bfloat16 (\"FlashAttention only support fp16 and bf16 data type\")", fix)

    def overflow_check(self, op: str, recv: Val | None, args: list[Val], kwargs: dict[str, Val], n: ast.Call,
                       function: bool) -> None:
        """DTL106: a fill/clamp constant that the destination's float16 cannot hold raises
        ``value cannot be converted to type c10::Half without overflow`` (facts §3.1)."""
        fa = self.fa
        # the value argument(s) and the tensor whose dtype receives them
        if op == "full":
            target = self.explicit_dtype(kwargs)
            kind = target.const if target is not None else None
            value_nodes = n.args[1:2] + [k.value for k in n.keywords if k.arg == "fill_value"]
            dest_node = None
        else:
            dest = recv  # for the function forms (torch.masked_fill(x, ...)) the first argument
            kind = dest.kind if dest is not None else None
            pos = {"masked_fill": 1, "masked_fill_": 1, "fill_": 0, "full_like": 1, "clamp": 0, "clamp_min": 0,
                   "clamp_max": 0, "clip": 0, "clamp_": 0}[op]
            if function:
                pos += 1  # torch.masked_fill(x, mask, value): the receiver is the first argument
                dest_node = n.args[0] if n.args else None
            else:
                dest_node = n.func.value if isinstance(n.func, ast.Attribute) else None
            value_nodes = list(n.args[pos:pos + (2 if op in ("clamp", "clip", "clamp_") else 1)])
            value_nodes += [k.value for k in n.keywords if k.arg in ("value", "min", "max", "fill_value")]
        if kind != "low":
            return
        limit = 65504.0 if fa.compute == "float16" else 3.3895313892515355e38
        dname = dtype_name("low", fa.compute)
        for vn in value_nodes:
            value, text = self.constant_value(vn)
            if value is None or abs(value) <= limit or value != value or abs(value) == float("inf"):
                continue
            anchor = self.anchor(dest_node) if dest_node is not None else None
            fix = None
            if anchor is not None:
                repl = f"torch.finfo({fa.seg(anchor)}.dtype).{'min' if value < 0 else 'max'}"
                fix = ("unsafe", f"Use `{repl}`", [(vn, "replace", repl)] + self.import_torch_edit())
            what = f"`{op}`" if op != "full" else "`torch.full(..., dtype=...)`"
            msg = (f"`{text}` does not fit in {dname} (largest finite value {limit:g}); {what} on a {dname} tensor "
                   f"in the {{regimes}} raises `value cannot be converted to type "
                   f"{'c10::Half' if fa.compute == 'float16' else 'c10::BFloat16'} without overflow`")
            steps: tuple[Step, ...] = ()
            if isinstance(dest_node, ast.Name):
                # where the destination got its (compute) dtype: its last assignment above the sink
                earlier = [v for v in fa.assignments(self.fn).get(dest_node.id, ()) if v.lineno < n.lineno]
                if earlier:
                    src_node = max(earlier, key=lambda v: (v.lineno, v.col_offset))
                    how = "under CUDA autocast" if self.ac else f"in the {self.regime} regime"
                    steps = (fa.step(src_node, f"`{dest_node.id} = {fa.seg(src_node)}` is {dname} {how}"),)
            if dest_node is not None and not steps:
                steps = (fa.step(dest_node, f"`{fa.seg(dest_node)}` is {dname} here"),)
            self.emit("DTL106", n, op, msg, steps,
                      f"the constant reaches {what}, which converts it to {dname} with an overflow check", fix)
            return

    def constant_value(self, node: ast.AST) -> tuple[float | None, str]:
        """Numeric value of ``-1e9``, ``1e5``, ``torch.finfo(torch.float32).min`` (else None)."""
        text = self.fa.seg(node)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return float(node.value), text
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v, _ = self.constant_value(node.operand)
            if v is None:
                return None, text
            return (-v if isinstance(node.op, ast.USub) else v), text
        if isinstance(node, ast.Attribute) and node.attr in ("min", "max") and isinstance(node.value, ast.Call):
            call = node.value
            q = self.fa.names.qualify(call.func)
            if q == "torch.finfo" and call.args:
                d = dtype_of_expr(call.args[0], self.fa.names)
                big = {"fp32": 3.4028234663852886e38, "fp64": 1.7976931348623157e308}.get(d or "")
                if big is not None:
                    return (-big if node.attr == "min" else big), text
        return None, text

    def import_torch_edit(self) -> list:
        """An edit adding ``import torch`` when the module does not bind ``torch``."""
        if self.fa.names.aliases.get("torch") == "torch":
            return []
        return [(None, "import", "import torch\n")]

    def index_finding(self, n: ast.AST, sink: str, dest: Val, src: Val, dest_node, src_node, what: str) -> None:
        fa = self.fa
        cd = fa.compute
        dn, sn = dtype_name(dest.kind, cd), dtype_name(src.kind, cd)
        dlabel = fa.seg(dest_node)
        slabel = fa.seg(src_node) if src_node is not None else "the assigned value"
        slabel_q = f"`{slabel}`" if src_node is not None else slabel
        msg = (f"{slabel_q} ({sn}) is written into `{dlabel}` ({dn}) by {what} in the {{regimes}}, which requires "
               f"the source and destination dtypes to match, even under autocast")
        prov = src.prov if src.kind in ("fp32", "fp64") else dest.prov
        fix = None
        dest_anchor = self.anchor(dest_node)
        if src_node is not None and dest_anchor is not None:
            fix = ("safe", f"Cast `{slabel}` to `{fa.seg(dest_anchor)}.dtype`", [(src_node, "cast", f"{fa.seg(dest_anchor)}.dtype")])
        self.emit("DTL105", n, sink, msg, prov, f"reaches {what}, which requires equal source and destination dtypes", fix)

    def residual_check(self, n: ast.AST, a: Val, b: Val, ln, rn) -> bool:
        """DTL104: an fp32-kept module's output added to the low-precision residual stream."""
        for x, y, xn, yn in ((a, b, ln, rn), (b, a, rn, ln)):
            if x.kept and x.kind in ("fp32", "fp64") and not x.zdim and y.kind in ("low", "olp") and not y.zdim \
                    and self.is_residual(yn, xn):
                fa = self.fa
                msg = (f"`{fa.seg(xn)}` is float32 (output of `{x.kept}`, kept in float32) and is added to the "
                       f"{fa.compute} residual `{fa.seg(yn)}` in the {{regimes}}: the residual stream becomes float32")
                fix = None
                ya = self.anchor(yn)
                if ya is not None and xn is not None:
                    fix = ("unsafe", f"Cast `{fa.seg(xn)}` back to `{fa.seg(ya)}.dtype` before the residual add",
                           [(xn, "cast", f"{fa.seg(ya)}.dtype")])
                self.emit("DTL104", n, "+", msg, x.prov,
                          "the float32 module output is added to the low-precision residual stream (fused norms expecting the compute dtype fail downstream)", fix)
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

    @staticmethod
    def simple(node: ast.AST | None) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name)

    def cast_fix(self, wides: list[Operand], partner: Operand, code: str, module: str | None):
        if partner.node is None and module is None:
            return None
        fa = self.fa
        edits = []
        if module is not None:
            # linear module: cast the input to the weight dtype (the T5 `wo` guard style)
            inp = next((o for o in [*wides, partner] if o.node is not None), None)
            wt = next((o for o in [*wides, partner] if o.node is None), None)
            if inp is None or wt is None:
                return None
            return ("safe", f"Cast `{inp.label}` to `{wt.label}.dtype`", [(inp.node, "cast", f"{wt.label}.dtype")])
        anchor = self.anchor(partner.node)
        if anchor is None:
            return None
        for o in wides:
            if o.node is None:
                return None
            edits.append((o.node, "cast", f"{fa.seg(anchor)}.dtype"))
        labels = ", ".join(f"`{fa.seg(o.node)}`" for o in wides)
        return ("safe", f"Cast {labels} to `{fa.seg(anchor)}.dtype` where it reaches the sink", edits)

    def anchor(self, node: ast.AST | None) -> ast.AST | None:
        """The simplest sub-expression with the same dtype: ``r.view(B, T, H, -1)`` -> ``r``."""
        keep = self.api.keep | self.api.split
        while node is not None and not self.simple(node):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in keep:
                node = node.func.value
            elif isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
                node = node.value
            else:
                return None
        return node

    def emit(self, code: str, n: ast.AST, sink: str, msg: str, prov: tuple[Step, ...], sink_step: str, fix) -> None:
        if not self.report:
            return
        self.fa.record(RawFinding(code, self.regime, n, sink, msg, prov, sink_step, fix, self.root, self.depth == 0))
