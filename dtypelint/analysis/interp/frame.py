"""One function body in one regime: statements over path states.

``Frame`` interprets statements on a list of ``State``s (``dtypelint.analysis.paths``):
an ``if`` whose test the analysis cannot decide runs both branches and keeps their
states apart where dtypes differ; loops run to a fixpoint over the states; ``return``
and ``raise`` end a state's path; ``with torch.autocast(..., enabled=False)`` switches
autocast for its block.  Inside a simple statement (an assignment, an expression, a
return) a value may have alternatives (a callee that returns different dtypes on
different paths, ``a if c else b``): the statement is replayed once per combination
of alternatives, each giving its own state, so no path combines values another path
produced.  Expressions, calls, modules, ops and sinks are the mixins this class
assembles; ``FileAnalysis`` (``file.py``) holds what is shared by every frame of a file.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from dtypelint.analysis.interp.calls import CallMixin
from dtypelint.analysis.interp.exprs import ExprMixin
from dtypelint.analysis.interp.hints import HintMixin
from dtypelint.analysis.interp.modules import ModuleMixin
from dtypelint.analysis.interp.ops import OpsMixin
from dtypelint.analysis.interp.sinks import SinkMixin
from dtypelint.analysis.lattice import NONE, SCALAR, UNKNOWN, Val, join, tensor
from dtypelint.analysis.names import canonical_torch
from dtypelint.analysis.paths import (
    Clause, State, clause, decision_names, fact_of, merge_states, signature_key, state_signature,
)

# parameters that name Python integers (sizes, counts): scalars, never tensors
SCALAR_PARAM = re.compile(r"^(dims?|\w+_dim|num_\w+|n|n_\w+|sizes?|\w+_size|layer_idx|head_dim|steps?|seq_len|max_\w+)$")
# parameters whose names say they are integer/bool tensors or objects, not activations
NON_ACTIVATION = re.compile(
    r"(^|_)(ids?|mask|masks|index|indices|idx|positions?|pos|lengths?|seqlens?|cu_seqlens\w*|steps?|offsets?|"
    r"labels?|layer_idx|past\w*|layer_past|kwargs|config|generator|training|module|self|cls|"
    r"timesteps?|t|sizes?|shape|dims?|num\w*|n|device|\w*_device|dtype|\w*_dtype|\w*_ids|\w*_mask)$"
)
AUTOCAST_NAMES = ("torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast_mode.autocast",
                  "torch.cpu.amp.autocast")
MAX_REPLAYS = 16  # combinations of value alternatives tried for one statement
# paths kept apart per function: an entry function keeps the most; a callee returns its paths as
# alternatives anyway, so deep frames keep few (the work multiplies with the call depth)
STATES_AT_DEPTH = (16, 6, 3, 2, 1, 1, 1)
WORK_BUDGET = 40_000  # statement evaluations per entry function before paths are no longer kept apart
MAX_ALTERNATIVES = 6  # alternatives of one value (more are joined)
LOOP_ROUNDS = 2  # a second pass sees the values the first pass carried around the loop


@dataclass
class Replay:
    """The choices of one evaluation of a simple statement (see ``Frame.choose``)."""

    vector: list[int]
    pos: int = 0
    arity: list[int] = field(default_factory=list)
    clauses: list[Clause] = field(default_factory=list)


class Frame(ExprMixin, CallMixin, ModuleMixin, OpsMixin, SinkMixin, HintMixin):
    """One function body in one regime."""

    def __init__(self, fa, fn: ast.FunctionDef, cls, regime: str, report: bool, ac: bool | None = None,
                 self_kept: str = "", depth: int = 0, self_text: str = "self", root: int | None = None,
                 self_path: str = "", cond: tuple = (), self_forced: str = "", origin=None):
        self.fa = fa
        self.origin = origin or fa  # the FileAnalysis of the file being analysed (this frame may be in another)
        self.fn = fn
        self.cls = cls
        self.regime = regime
        self.report = report
        self.ac = (regime == "autocast") if ac is None else ac
        self.self_kept = self_kept  # this instance was built in float32 (applies to all its parameters)
        self.self_path = self_path  # attribute path of this instance inside the model
        self.self_forced = self_forced  # converted to float32 at run time: every regime (why)
        self.depth = depth
        self.api = fa.api
        self.root = id(fn) if root is None else root  # the entry function this analysis started from
        self.self_text = self_text
        self.outer_cond = cond  # the caller's path condition (for events inside a call)
        self.returns: list[tuple[Val, tuple[Clause, ...]]] = []
        self.ends: list[State] = []  # the states that ran to the end of the body
        self.state: State = State({})
        self.cur_env: dict[str, Val] = {}  # the environment of the call being evaluated (for fix hints)
        self._replay: Replay | None = None
        self._in_simple = False  # evaluating a simple statement: alternatives replay it
        self._chooser = None  # the frame whose statement this frame's expression belongs to
        self._pristine: State | None = None  # the state before the first alternative of this statement
        self.cur_stmt: ast.AST | None = None
        self.entry_low = False  # a low-precision tensor was among the arguments (for return events)
        self.entry_main = ""  # the first parameter bound to a low-precision tensor (the main input)

    # -- entry points -------------------------------------------------------------------
    def param_names(self) -> list[ast.arg]:
        a = self.fn.args
        return list(a.posonlyargs) + list(a.args)

    def run_default(self) -> Val:
        """Interpret the body on its own: tensor parameters are activations in the compute dtype.
        Returns the returned value joined over paths."""
        env: dict[str, Val] = {}
        args = self.fn.args
        positional = list(args.posonlyargs) + list(args.args)
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        is_method = self.cls is not None and not any(
            isinstance(d, ast.Name) and d.id == "staticmethod" for d in self.fn.decorator_list)
        for i, (a, d) in enumerate(list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))):
            if i == 0 and is_method:
                env[a.arg] = Val("self")
                continue
            env[a.arg] = self.default_param(a, d)
        if args.vararg:
            env[args.vararg.arg] = UNKNOWN
        if args.kwarg:
            env[args.kwarg.arg] = UNKNOWN
        # a function also called in this file with the same dtypes is interpreted once for both
        alts = self.interpret(self, env, ("", "", "") if is_method else None)
        out = None
        for v, _ in alts:
            out = v if out is None else join(out, v)
        return out if out is not None else NONE

    def worth_running(self) -> bool:
        """Whether interpreting this function on its own can reach a sink with a known dtype: it takes
        an activation, makes or casts a tensor, uses its module's attributes or multiplies matrices.
        A model-factory or config function (`def vit_small(pretrained=False, **kwargs)`) does none."""
        from dtypelint.analysis.fninfo import info

        facts = info(self.fn)
        if facts.makes_tensors or facts.has_matmul or (self.cls is not None and facts.first_param_attrs):
            return True
        args = self.fn.args
        positional = list(args.posonlyargs) + list(args.args)
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults))[1 if self.cls is not None else 0:] + list(
            zip(args.kwonlyargs, args.kw_defaults))
        return any(self._default_param(a, d).is_tensor for a, d in pairs)

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
            if isinstance(default.value, (int, float)):
                return Val("scalar", scalar_float=isinstance(default.value, float))
            return UNKNOWN
        if ann:
            low = ann.lower()
            if "Tensor" in ann and "tuple" not in low and "list" not in low and "dict" not in low:
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

    def run(self, env: dict[str, Val]) -> list[tuple[Val, tuple[Clause, ...]]]:
        """Interpret the body from ``env``; the returned values with the clauses of their paths."""
        self.entry_low = any(v.kind in ("low", "olp") and not v.zdim for v in env.values())
        self.entry_main = next((p.arg for p in self.param_names() if env.get(p.arg, UNKNOWN).kind in ("low", "olp")
                                and not env[p.arg].zdim), "")
        ends = self.block(self.fn.body, [State(dict(env))], set())
        self.ends = ends
        for st in ends:  # falling off the end returns None
            self.returns.append((NONE, st.clauses))
        return self.returns

    def result(self) -> Val:
        """The returned value joined over paths (for callers that need one value)."""
        out = None
        for v, _ in self.returns:
            out = v if out is None else join(out, v)
        return out if out is not None else NONE

    # -- path choices -------------------------------------------------------------------
    def choose(self, alts: list[tuple[Val, Clause | None]]) -> Val:
        """One of several values a path may see.  In a simple statement, each replay takes one
        alternative (and its clause joins the path's condition); elsewhere they are joined."""
        if not alts:
            return UNKNOWN
        if len(alts) == 1:
            return alts[0][0]
        if self._chooser is not None:
            return self._chooser.choose(alts)  # a lambda or initialiser evaluated for its caller's statement
        if len(alts) > MAX_ALTERNATIVES:
            tail = alts[MAX_ALTERNATIVES - 1:]
            joined = tail[0][0]
            for v, _ in tail[1:]:
                joined = join(joined, v)
            alts = alts[:MAX_ALTERNATIVES - 1] + [(joined, None)]
        r = self._replay
        if r is None and self._in_simple:
            # the first value with alternatives in this statement: keep the state as it was before it
            st = self.state
            self._pristine = State(dict(st.env), st.clauses, dict(st.facts))
            r = self._replay = Replay([])
        if r is None:
            out = alts[0][0]
            for v, _ in alts[1:]:
                out = join(out, v)
            return out
        if r.pos < len(r.vector):
            i = min(r.vector[r.pos], len(alts) - 1)
        else:
            i = 0
            r.vector.append(0)
        r.arity.append(len(alts))
        r.pos += 1
        v, cl = alts[i]
        if cl is not None:
            r.clauses.append(cl)
        return v

    def state_limit(self) -> int:
        if self.fa.work.get(self.root, 0) > WORK_BUDGET:
            return 1
        return STATES_AT_DEPTH[min(self.depth, len(STATES_AT_DEPTH) - 1)]

    def current_cond(self) -> tuple[Clause, ...]:
        """The clauses of the path being evaluated (with the caller's, for a callee)."""
        extra = tuple(self._replay.clauses) if self._replay is not None else ()
        return self.outer_cond + self.state.clauses + extra

    def current_clauses(self) -> tuple[Clause, ...]:
        extra = tuple(self._replay.clauses) if self._replay is not None else ()
        return self.state.clauses + extra

    def decided(self, test: ast.AST) -> bool | None:
        """The truth of ``test`` on the current path, when an earlier branch decided it."""
        key, negated = fact_of(test)
        if key in self.state.facts:
            return self.state.facts[key] != negated
        if self._replay is not None:
            for c in self._replay.clauses:
                if c.key == key:
                    return c.truth != negated
        return None

    # -- statements ---------------------------------------------------------------------
    def block(self, body: list[ast.stmt], states: list[State], live_after: set[str]) -> list[State]:
        """Run statements over states; states whose path returned or raised are dropped."""
        later = self.fa.read_later(body)
        for i, s in enumerate(body):
            if not states:
                return states
            states = self.stmt_states(s, states, later[i] | live_after if live_after else later[i])
        return states

    def stmt_states(self, s: ast.stmt, states: list[State], live: set[str]) -> list[State]:
        if isinstance(s, ast.If):
            return self.if_stmt(s, states, live)
        if isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            return self.loop(s, states, live)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            return self.with_block(s, states, live)
        if isinstance(s, ast.Try) or type(s).__name__ == "TryStar":
            out = self.block(s.body + s.orelse, [st.copy() for st in states], live)
            for h in s.handlers:
                out = out + self.block(h.body, [st.copy() for st in states], live)
            out = merge_states(out, live, self.state_limit(), decision_names(self.fn))
            if s.finalbody and out:
                out = self.block(s.finalbody, out, live)
            return out
        out: list[State] = []
        for st in states:
            out.extend(self.run_simple(s, st))
        # paths only multiply where a value had alternatives: merge then, not after every statement
        return merge_states(out, live, self.state_limit(), decision_names(self.fn)) if len(out) > len(states) else out

    def run_simple(self, s: ast.stmt, state: State) -> list[State]:
        """A simple statement in one state, replayed once per combination of value alternatives.

        The first evaluation runs on the state itself; only when a value turns out to have
        alternatives (``choose``) is a pristine copy kept to replay the other combinations."""
        work = self.fa.work
        work[self.root] = work.get(self.root, 0) + 1
        alive, replay = self._evaluate(s, state, None)
        if replay is None:
            return [state] if alive else []
        pristine = self._pristine
        out: list[State] = []
        if alive:
            st = state
            for c in replay.clauses:
                st = st.assume(c)
            out.append(st)
        pending = [replay.vector[:pos] + [alt] for pos in range(len(replay.arity))
                   for alt in range(1, replay.arity[pos])]
        runs = 1
        while pending and runs < MAX_REPLAYS:
            vector = pending.pop()
            st = pristine.copy()
            alive, replay = self._evaluate(s, st, Replay(list(vector)))
            runs += 1
            if alive:
                for c in replay.clauses:
                    st = st.assume(c)
                out.append(st)
            for pos in range(len(vector), len(replay.arity)):
                for alt in range(1, replay.arity[pos]):
                    pending.append(replay.vector[:pos] + [alt])
        return out

    def _evaluate(self, s: ast.stmt, st: State, replay: Replay | None) -> tuple[bool, Replay | None]:
        """Evaluate ``s`` in ``st`` (with ``replay``'s choices); sets ``self._pristine`` when a first
        evaluation met alternatives."""
        saved = (self._replay, self.state, self.cur_stmt, self._in_simple)
        self._replay, self.state, self.cur_stmt, self._in_simple = replay, st, s, True
        if replay is None:
            self._pristine = None
        try:
            alive = self.simple_stmt(s, st.env)
            replay = self._replay
            if self.report:
                self.fa.executions.setdefault((self.regime, self.root, id(s)), []).append(
                    (self.outer_cond, st.clauses, tuple(replay.clauses) if replay is not None else ()))
        finally:
            self._replay, self.state, self.cur_stmt, self._in_simple = saved
        return alive, replay

    def simple_stmt(self, s: ast.stmt, env: dict[str, Val]) -> bool:
        """Run one simple statement in the current state; False when its path ends here."""
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
                self.matmul_sink(s, [self.operand(s.target, cur), self.operand(s.value, rhs)], "@=")
            if cur.kind in ("low", "olp") and rhs.is_float:
                self.fa.fates.cast_back(rhs.prov)  # `x += y` writes into the low-precision x
            if not cur.is_tensor:
                # in-place on a tensor keeps its dtype (facts §2.2); otherwise it rebinds
                res = self.binop(s.op, cur, rhs, s, s.target, s.value)
                self.bind(s.target, res, env, None)
        elif isinstance(s, ast.Expr):
            self.eval(s.value, env)
        elif isinstance(s, ast.Return):
            v = self.eval(s.value, env) if s.value is not None else NONE
            self.return_sink(s, v)
            if self.depth == 0:
                for item in (v.items if v.kind == "tuple" else (v,)):
                    if item.is_float and not item.zdim:  # a 0-dim result (a loss) promotes nothing
                        self.fa.fates.escape(item.prov)  # the entry function returns it to its caller
            self.returns.append((v, self.current_clauses()))
            return False
        elif isinstance(s, ast.Raise):
            return False
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            from dtypelint.analysis.interp.values import FuncRef

            env[s.name] = Val("func", ref=FuncRef(s, None))
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Name):
                    env.pop(t.id, None)
        elif isinstance(s, ast.Assert):
            self.assert_stmt(s, env)
        return True

    def assert_stmt(self, s: ast.Assert, env: dict[str, Val]) -> None:
        """``assert x is not None`` / ``assert x.dtype == y.dtype``: the rest of the path knows it."""
        self.eval(s.test, env)
        refined = self.refine(s.test, env, True)
        if refined is not env:
            env.clear()
            env.update(refined)

    def if_stmt(self, s: ast.If, states: list[State], live: set[str]) -> list[State]:
        out: list[State] = []
        for st in states:
            c = self.decide(s.test, st)
            if c is True:
                out.extend(self.block(s.body, [st], live))
                continue
            if c is False:
                out.extend(self.block(s.orelse, [st], live))
                continue
            yes = st.assume(clause(s.test, True, self.fa.seg))
            no = st.assume(clause(s.test, False, self.fa.seg))
            yes.env = self.refine(s.test, yes.env, True)
            no.env = self.refine(s.test, no.env, False)
            out.extend(self.block(s.body, [yes], live))
            out.extend(self.block(s.orelse, [no], live))
        return merge_states(out, live, self.state_limit(), decision_names(self.fn))

    def decide(self, test: ast.AST, st: State) -> bool | None:
        key, negated = fact_of(test)
        if key in st.facts:
            return st.facts[key] != negated
        saved = self.state
        self.state = st
        try:
            return self.cond(test, dict(st.env))
        finally:
            self.state = saved

    def loop(self, s: ast.stmt, states: list[State], live: set[str]) -> list[State]:
        live = live | self.fa.reads(s)
        # a second pass matters only if the body changed a value the loop reads and that existed before it
        carried = {k for st in states for k in st.env if k in live or "." in k}
        cur = states
        done: set = set()  # signatures of states the body already ran from
        first = True
        for _ in range(LOOP_ROUNDS):
            entry: list[State] = []
            todo = []
            nonempty = first and not isinstance(s, ast.While)
            for st in cur:
                sig = signature_key(state_signature(st, carried))
                if sig not in done:
                    done.add(sig)
                    todo.append(st)
            for st in todo:
                st = st.copy()
                saved = self.state
                self.state = st
                try:
                    if isinstance(s, ast.While):
                        self.cond(s.test, st.env)
                    else:
                        it = self.eval(s.iter, st.env)
                        nonempty = nonempty and (it.const == "nonempty" or (it.kind == "tuple" and bool(it.items)))
                        self.bind(s.target, self.element(it), st.env, None)
                finally:
                    self.state = saved
                entry.append(st)
            body = self.block(s.body, entry, live)
            # an iterable known to hold items: the path that skips the body is not a path of the program
            skipped = [] if nonempty and len(todo) == len(cur) else cur
            first = False
            new = merge_states(skipped + body, live, self.state_limit(), decision_names(self.fn))
            if {signature_key(state_signature(x, carried)) for x in new} == \
                    {signature_key(state_signature(x, carried)) for x in cur}:
                cur = new
                break
            cur = new
        if s.orelse and cur:
            cur = self.block(s.orelse, cur, live)
        return cur

    def with_block(self, s: ast.With, states: list[State], live: set[str]) -> list[State]:
        saved = self.ac
        entry = []
        for st in states:
            st = st.copy()
            prev = self.state
            self.state = st
            try:
                for item in s.items:
                    ce = item.context_expr
                    ac = self.autocast_state(ce, st.env)
                    if ac is not None:
                        self.ac = ac
                    else:
                        self.eval(ce, st.env)
                    if item.optional_vars is not None:
                        self.bind(item.optional_vars, UNKNOWN, st.env, None)
            finally:
                self.state = prev
            entry.append(st)
        try:
            return self.block(s.body, entry, live)
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
            starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
            items = self.unpack(v, len(elts) if not starred else None)
            if items is not None and not starred:
                for e, item in zip(elts, items):
                    self.bind(e, item, env, None)
                return
            if items is not None and len(starred) == 1 and len(items) >= len(elts) - 1:
                i = starred[0]
                tail = len(elts) - i - 1
                for e, item in zip(elts[:i], items[:i]):
                    self.bind(e, item, env, None)
                rest = items[i:len(items) - tail]
                self.bind(elts[i].value, Val("tuple", items=tuple(rest)), env, None)
                for e, item in zip(elts[i + 1:], items[len(items) - tail:]):
                    self.bind(e, item, env, None)
                return
            elem = self.element(v)
            for e in elts:
                if isinstance(e, ast.Starred):
                    self.bind(e.value, UNKNOWN, env, None)
                else:
                    self.bind(e, elem, env, None)
        elif isinstance(target, ast.Attribute):
            key = self.attr_key(target)
            if key:
                env[key] = v
        elif isinstance(target, ast.Subscript):
            self.subscript_store(target, v, env, value_node)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, UNKNOWN, env, None)

    def unpack(self, v: Val, n: int | None) -> tuple[Val, ...] | None:
        """The items of a value unpacked into ``n`` targets (None: unknown count)."""
        if v.kind == "tuple" and (n is None or len(v.items) == n):
            return v.items
        return None

    @staticmethod
    def attr_key(node: ast.Attribute) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return ".".join([node.id] + list(reversed(parts)))
        return None

    # -- conditions ---------------------------------------------------------------------
    def refine(self, test: ast.AST, env: dict[str, Val], branch: bool) -> dict[str, Val]:
        """Narrow values on a branch: after ``if x.dtype != w.dtype: ...`` the else branch knows
        ``x`` has ``w``'s dtype (the T5 ``wo`` guard); after ``if x is not None`` x is not None."""
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
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op = test.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(test.comparators[0], ast.Constant) \
                    and test.comparators[0].value is None:
                return self.refine_none(test.left, env, isinstance(op, ast.Is) == branch)
            if isinstance(op, (ast.Eq, ast.NotEq)):
                return self.refine_dtype(test, env, isinstance(op, ast.Eq) == branch)
        if isinstance(test, (ast.Name, ast.Attribute)) and not branch:
            # `if self.embed:` false: a module attribute that may be None is None here
            return self.refine_none(test, env, True, only_optional=True)
        if isinstance(test, (ast.Name, ast.Attribute)) and branch:
            return self.refine_none(test, env, False, only_optional=True)
        return env

    def refine_none(self, node: ast.AST, env: dict[str, Val], is_none: bool, only_optional: bool = False) -> dict[str, Val]:
        key = node.id if isinstance(node, ast.Name) else (self.attr_key(node) if isinstance(node, ast.Attribute) else None)
        if key is None:
            return env
        cur = self.eval(node, env)
        if is_none:
            if only_optional and not (cur.kind == "module" and cur.ref.optional):
                return env
            env = dict(env)
            env[key] = NONE
            return env
        if cur.kind == "module" and cur.ref.optional:
            from dataclasses import replace

            env = dict(env)
            env[key] = Val("module", ref=replace(cur.ref, optional=False))
        return env

    def refine_dtype(self, test: ast.Compare, env: dict[str, Val], equal: bool) -> dict[str, Val]:
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
        d = self.decided(test)
        if d is not None:
            return d
        v = self.eval(test, env)
        if v.kind == "pybool":
            return v.const
        if v.kind == "none":
            return False
        if v.kind == "module" and not v.ref.optional:
            return True
        return None
