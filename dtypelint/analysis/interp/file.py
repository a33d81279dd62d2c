"""What is known about one file, shared by every frame of every regime.

``FileAnalysis`` holds the file's imports, classes (with their ``__init__`` facts),
functions and module-level values, finds classes and functions of other modules
(``Project``: the run's index or the disk), answers keep-list questions per model
(``keep_lists``), knows which callees are dtype-strict (``strictness``), and collects
the sink events of its entry points.  Positions are 1-based code-point columns.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import Any

from dtypelint.analysis.api import SinkDef, load_api
from dtypelint.analysis.events import SinkEvent
from dtypelint.analysis.fninfo import info
from dtypelint.analysis.keep_lists import KeepIndex
from dtypelint.analysis.lattice import Step, Val
from dtypelint.analysis.module_facts import ClassFacts, class_facts
from dtypelint.analysis.names import Names, canonical_torch
from dtypelint.analysis.strictness import transitive_params

MAX_REEXPORT_HOPS = 6


def _cheap(node: ast.AST, depth: int = 0) -> bool:
    """Names, attributes, constants, lambdas, ``partial(...)`` and small containers of those."""
    if depth > 2:
        return False
    if isinstance(node, (ast.Name, ast.Attribute, ast.Constant, ast.Lambda)):
        return True
    if isinstance(node, ast.Dict):
        return len(node.values) <= 64 and all(_cheap(v, depth + 1) for v in node.values)
    if isinstance(node, (ast.Tuple, ast.List)):
        return len(node.elts) <= 64 and all(_cheap(v, depth + 1) for v in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
        f = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
        return f == "partial" and all(_cheap(a, depth + 1) for a in node.args)
    return False


def makes_tensors(fn) -> bool:
    """Whether a function body calls anything that creates or casts a tensor."""
    return info(fn).makes_tensors


def carries_data(v: Val) -> bool:
    """A value whose dtype (or whose tensors' dtypes) a callee could pass on or compare."""
    if v.is_tensor or v.kind in ("module", "object"):
        return True
    if v.kind == "tuple":
        return any(carries_data(i) for i in v.items)
    if v.kind == "seq":
        return isinstance(v.ref, Val) and carries_data(v.ref)
    return False


class FileAnalysis:
    def __init__(self, tree: ast.Module, text: str, filename: str, module_name: str, settings, project=None,
                 is_package: bool = False):
        self.tree = tree
        self.text = text
        self.filename = filename
        self.module_name = module_name
        self.settings = settings
        self.project = project
        self.api = load_api()
        self.names = Names(tree, module_name, is_package)
        self.lines = re.split(r"\r\n|\r|\n", text)
        self.compute = getattr(settings, "compute_dtype", "float16") if settings is not None else "float16"
        self.classes: dict[str, tuple[ast.ClassDef, ClassFacts]] = {}
        self.functions: dict[str, ast.FunctionDef] = {}
        self.globals: dict[str, ast.AST] = {}
        self._collect(tree.body, top=True)
        self.user_sinks: dict[str, SinkDef] = {}
        for s in getattr(settings, "sinks", ()) or ():
            self.user_sinks[s.name] = SinkDef(s.name, s.contract, s.args, s.positions)
        self.keep_index = KeepIndex(self)
        self.events: list[SinkEvent] = []
        self.called: set[tuple[str, int]] = set()
        self.collectors: list[list[SinkEvent]] = []  # events made inside active calls (for the memo)
        self.memo: dict[Any, Any] = {}
        self._strict: dict[int, tuple[str, ...]] = {}
        self._reads: dict[int, frozenset[str]] = {}
        self._later: dict[int, tuple[list, list]] = {}
        self._replayed: set[tuple[int, int]] = set()  # (event, root) pairs already recorded from the memo
        self._global_busy: set[str] = set()
        self._globals_done: dict[tuple, Val | None] = {}
        self._class_cache: dict[str, tuple] = {}
        self._function_cache: dict[str, tuple | None] = {}
        self.init_values: dict[tuple, Val] = {}
        self.act_params: dict[int, set[str]] = {}  # per function: parameters taken as activations
        self.executions: dict[tuple, list] = {}  # (regime, root, statement) -> path conditions it ran under
        self.work: dict[int, int] = {}
        self.active: set[int] = set()  # functions being interpreted now (recursion is not followed)
        self.loaded_sensitive: set[int] = set()  # entries whose half run read a fact `loaded` reads differently
        self.sensitive_marks = 0  # how often that happened (a memoised call remembers whether it did)
        self.called_by: dict[tuple[str, int], set[int]] = {}  # (regime, entry) -> functions of this file it called  # statements evaluated per entry function (bounds path splitting)

    def _collect(self, body: list[ast.stmt], top: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = (node, class_facts(node, self.names, self.filename))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.globals[t.id] = node.value
            elif isinstance(node, (ast.If, ast.Try)):
                self._collect(node.body, top=False)
                for h in getattr(node, "handlers", []):
                    self._collect(h.body, top=False)
                self._collect(node.orelse, top=False)

    @property
    def settings_key(self) -> tuple:
        return (self.compute, tuple(sorted(self.user_sinks)))

    # -- other modules ------------------------------------------------------------------------
    def foreign(self, module_name: str) -> "FileAnalysis | None":
        if module_name == self.module_name:
            return self
        if self.project is None:
            return None

        def build(entry, tree):
            return FileAnalysis(tree, entry.source, entry.filename, entry.module_name, self.settings, self.project,
                                is_package=entry.is_package)

        fa = self.project.module(module_name, self.settings_key, build)
        if fa is not None:
            fa.project = self.project  # lookups and dependencies go to the file being analysed now
        return fa

    def resolve(self, qname: str, hops: int = 0) -> tuple[str, Any, "FileAnalysis"] | None:
        """("class" | "function", node, its FileAnalysis) of a qualified name, following re-exports."""
        if hops > MAX_REEXPORT_HOPS or "." not in qname:
            return None
        mod, _, attr = qname.rpartition(".")
        if mod == self.module_name or (not mod and not self.module_name):
            fa = self
        else:
            fa = self.foreign(mod)
            if fa is None:
                # `pkg.module.Class.method` or a submodule attribute: try one level up
                return None
        if attr in fa.classes:
            return "class", fa.classes[attr], fa
        if attr in fa.functions:
            return "function", fa.functions[attr], fa
        target = fa.names.aliases.get(attr)
        if target and target != qname:
            return self.resolve(canonical_torch(target), hops + 1)
        return None

    def class_by_qname(self, qname: str) -> tuple[ast.ClassDef | None, ClassFacts | None, "FileAnalysis | None"]:
        hit = self._class_cache.get(qname)
        if hit is None:
            hit = self._class_cache[qname] = self._class_by_qname(qname)
        return hit

    def _class_by_qname(self, qname: str):
        short = qname.rsplit(".", 1)[-1]
        local = self.classes.get(short)
        if local is not None and (qname == local[1].qname or qname == short):
            return local[0], local[1], self
        if qname.startswith("torch."):
            return None, None, None
        found = self.resolve(qname)
        if found is not None and found[0] == "class":
            (cnode, facts), fa = found[1], found[2]
            return cnode, facts, fa
        return None, None, None

    def function_by_qname(self, qname: str) -> tuple[ast.FunctionDef, "FileAnalysis"] | None:
        if qname in self._function_cache:
            return self._function_cache[qname]
        out = self._function_cache[qname] = self._function_by_qname(qname)
        return out

    def _function_by_qname(self, qname: str):
        if qname.startswith("torch."):
            return None
        if self.module_name and qname.startswith(self.module_name + "."):
            name = qname[len(self.module_name) + 1:]
            if name in self.functions:
                return self.functions[name], self
        found = self.resolve(qname)
        if found is not None and found[0] == "function":
            return found[1], found[2]
        return None

    def ancestors(self, facts: ClassFacts, depth: int = 0) -> list[ClassFacts]:
        out = [facts]
        if depth > 6:
            return out
        for b in facts.bases:
            _, bf, _ = self.class_by_qname(b)
            if bf is not None and bf.qname != facts.qname:
                out.extend(self.ancestors(bf, depth + 1))
        return out

    def not_a_module(self, facts: ClassFacts, depth: int = 0) -> bool:
        """Whether the class derives from known classes none of which is an ``nn.Module`` (a feature extractor).

        A class with no base at all may be an attention processor that a module's ``forward`` calls under
        autocast, and a base the analysis cannot read may be a module: both count as possibly model code."""
        if depth > 6 or (depth == 0 and not facts.bases):
            return False
        for b in facts.bases:
            if b in ("object", "builtins.object", "abc.ABC", "typing.Generic", "enum.Enum"):
                continue
            if b.startswith("torch.") or b.endswith("Module"):
                return False
            _, bf, _ = self.class_by_qname(b)
            if bf is None or bf.qname == facts.qname or not self.not_a_module(bf, depth + 1):
                return False
        return True

    def method_node(self, facts: ClassFacts, meth: str, skip_self: bool = False):
        """(method node, its FileAnalysis) found through the class's bases, or None."""
        for i, anc in enumerate(self.ancestors(facts)):
            if skip_self and i == 0:
                continue
            cnode, _, fa = self.class_by_qname(anc.qname)
            if cnode is None:
                continue
            for item in cnode.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == meth:
                    return item, fa
        return None

    def global_value(self, name: str, frame) -> Val | None:
        """A module-level value (a dict of kernels, ``ACT = nn.GELU``), evaluated once per regime.

        Only cheap, callable-like definitions are evaluated (names, attributes, lambdas, partials and
        small containers of those): a module-level table of configurations is not worth interpreting."""
        node = self.globals.get(name)
        if node is None or name in self._global_busy or name in self.names.aliases or not _cheap(node):
            return None
        key = (name, frame.regime, frame.ac)
        if key in self._globals_done:
            return self._globals_done[key]
        self._global_busy.add(name)
        try:
            v = frame.eval(node, {})
        finally:
            self._global_busy.discard(name)
        out = v if v.kind in ("dict", "func", "qname", "tuple", "module", "scalar", "str", "dtype") else None
        self._globals_done[key] = out
        return out

    # -- keep lists -------------------------------------------------------------------------
    def kept_reason(self, facts: ClassFacts | None, name: str, is_module: bool) -> str:
        if facts is None:
            return ""
        return self.keep_index.kept_reason(facts, name, is_module, self.compute)

    def kept_reason_for_owner(self, owner: str, name: str, is_module: bool) -> str:
        _, facts, fa = self.class_by_qname(owner) if owner else (None, None, None)
        if facts is None or fa is None:
            return ""
        return fa.kept_reason(facts, name, is_module)

    def maybe_kept(self, facts: ClassFacts | None, name: str, is_module: bool) -> bool:
        if facts is None:
            return False
        return self.keep_index.maybe_kept(facts, name, is_module, self.compute)

    # -- strict callees -----------------------------------------------------------------------
    def strict_params(self, fn, fa: "FileAnalysis | None" = None) -> tuple[str, ...]:
        """Parameters whose dtypes ``fn`` (defined in ``fa``) asserts equal, directly or by passing them on."""
        fa = fa or self
        if fa is not self:
            return fa.strict_params(fn)
        key = id(fn)
        if key not in self._strict:
            self._strict[key] = ()  # recursion guard
            self._strict[key] = transitive_params(fn, self.call_target, lambda c, cfa: cfa.strict_params(c))
        return self._strict[key]

    def call_target(self, func: ast.AST):
        """The function a call expression names (this file or another), for strictness."""
        if isinstance(func, ast.Name) and func.id in self.functions:
            return self.functions[func.id], self
        q = self.names.qualify(func)
        if not q or q.startswith("torch."):
            return None
        found = self.function_by_qname(canonical_torch(q))
        return found

    # -- positions and source ---------------------------------------------------------------
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

    def step(self, node: ast.AST, message: str, kind: str = "", origin: str = "") -> Step:
        r, c = self.start(node)
        return Step(self.filename, r, c, message, kind, origin)

    @property
    def fates(self):
        """What became of promoted values (shared by every file the analysis of one file reaches)."""
        from dtypelint.analysis.fates import Fates

        holder = self.project if self.project is not None else self
        f = getattr(holder, "_fates", None)
        if f is None:
            f = holder._fates = Fates()
        return f

    def seg(self, node: ast.AST | None) -> str:
        if node is None:
            return "?"
        s = self.segment(node)
        if s is None:
            s = ast.unparse(node)
        s = " ".join(s.split())
        return s if len(s) <= 60 else s[:57] + "..."

    def segment(self, node: ast.AST) -> str | None:
        """Source text of a node (like ``ast.get_source_segment`` without re-splitting the file)."""
        try:
            r0, r1 = node.lineno - 1, node.end_lineno - 1
            c0, c1 = node.col_offset, node.end_col_offset
        except AttributeError:
            return None
        if r1 >= len(self.lines) or r0 < 0:
            return None
        if r0 == r1:
            return self.lines[r0].encode()[c0:c1].decode(errors="replace")
        first = self.lines[r0].encode()[c0:].decode(errors="replace")
        last = self.lines[r1].encode()[:c1].decode(errors="replace")
        return "\n".join([first] + self.lines[r0 + 1:r1] + [last])

    @staticmethod
    def assignments(fn: ast.AST) -> dict[str, list[ast.AST]]:
        """Local name -> the expressions assigned to it anywhere in ``fn`` (for data dependence)."""
        return info(fn).assignments

    def reads(self, stmt: ast.AST) -> frozenset[str]:
        """Names a statement reads, for deciding which values are still live (each statement once)."""
        key = id(stmt)
        r = self._reads.get(key)
        if r is None:
            out: set[str] = set()
            todo = [stmt]
            while todo:
                node = todo.pop()
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt) and child is not stmt:
                        out |= self.reads(child)
                    elif isinstance(child, ast.Name):
                        out.add(child.id)
                    else:
                        todo.append(child)
            r = frozenset(out)
            self._reads[key] = r
        return r

    def read_later(self, body: list) -> list[frozenset[str]]:
        """For each statement of a block, the names the rest of the block reads (cached per block)."""
        key = id(body)
        hit = self._later.get(key)
        if hit is not None and hit[0] is body:
            return hit[1]
        out: list[frozenset[str]] = [frozenset()] * len(body)
        acc: frozenset[str] = frozenset()
        for i in range(len(body) - 1, -1, -1):
            out[i] = acc
            acc = acc | self.reads(body[i])
        self._later[key] = (body, out)
        return out

    @staticmethod
    def env_key(env: dict[str, Val]) -> tuple:
        """What a call's result depends on: dtypes, and the values that decide which code runs.

        Strings and flags select code paths (``mode == "chunk"``), so they are part of the key when
        the call carries tensors; a call without any (a config or builder helper called from many
        model factories) is interpreted once per kind of arguments."""
        from dtypelint.analysis.paths import signature

        data = any(carries_data(v) for v in env.values())

        def key(v: Val) -> tuple:
            if not data:
                return (v.kind,)
            sig = signature(v)
            if sig == ("other",):
                return (v.kind, v.const if v.kind in ("str", "pybool") else None)
            return sig

        return tuple(sorted((k, key(v), id(v.hint[1]) if v.hint else 0) for k, v in env.items()))

    # -- running ------------------------------------------------------------------------------
    def run(self, regimes: tuple[str, ...]) -> list[SinkEvent]:
        """Interpret every function and method of the file on its own, per regime; the sink events."""
        from dtypelint.analysis.interp.frame import Frame

        entries = [(fn, None) for fn in self.functions.values()] + [
            (item, facts) for cnode, facts in self.classes.values() for item in cnode.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name != "__init__"]
        # a feature extractor's or trainer's methods: not model code run under autocast
        plain = {id(facts) for _, facts in self.classes.values() if self.not_a_module(facts)} \
            if "autocast" in regimes else set()
        for regime in regimes:
            for fn, facts in entries:
                if regime == "autocast" and facts is not None and id(facts) in plain:
                    continue
                if regime == "loaded" and "half" in regimes and id(fn) not in self.loaded_sensitive:
                    self.copy_half_run(id(fn))  # nothing on its paths reads differently when loaded
                    continue
                frame = Frame(self, fn, facts, regime, report=True)
                if frame.worth_running():
                    frame.run_default()
        return self.events

    def copy_half_run(self, root: int) -> None:
        """The ``loaded`` results of an entry whose ``half`` run consulted nothing the regimes read
        differently: its events, calls and statement runs, relabelled."""
        for e in [e for e in self.events if e.root == root and e.regime == "half"]:
            self.events.append(replace(e, regime="loaded"))
        for fid in self.called_by.get(("half", root), ()):
            self.called.add(("loaded", fid))
        for (regime, r, stmt), runs in list(self.executions.items()):
            if r == root and regime == "half":
                self.executions[("loaded", r, stmt)] = list(runs)

    def record(self, e: SinkEvent) -> None:
        self.events.append(e)
        for c in self.collectors:
            c.append(e)
