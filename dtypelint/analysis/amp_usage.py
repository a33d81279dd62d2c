"""Mixed-precision training API usage: a syntactic pass over a file's scopes.

The AMP hygiene rules (DTL201-DTL205) are about how a training step drives autocast and
GradScaler, not about dtypes flowing through a model, so they need no regimes and no
abstract interpretation: what a scope (a function, or the module's top level) opens as an
autocast region, where it calls ``backward``, which GradScaler steps which optimizer of
which ``.half()``-converted model, and which loss runs inside a CUDA autocast region.  This
pass reads those facts from the ``ast`` and emits them as regime-less sink events for the
rules to judge:

- ``amp-api``: a reference to a deprecated ``torch.cuda.amp`` / ``torch.cpu.amp`` name.
- ``amp-backward``: a ``.backward()`` of a value computed under a float16 autocast region.
- ``amp-scaler-step``: ``scaler.step(opt)`` / ``scaler.unscale_(opt)`` of a GradScaler.
- ``amp-loss``: ``F.binary_cross_entropy`` / an ``nn.BCELoss`` called inside autocast.
- ``amp-scaler``: a GradScaler made or used in a scope whose autocast regions are all bfloat16.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from dtypelint.analysis.events import SinkEvent
from dtypelint.analysis.module_facts import dtype_of_expr

# a file (or a function) none of these words appear in has no AMP usage worth a walk
TRIGGER_WORDS = ("autocast", "GradScaler", "custom_fwd", "custom_bwd", "binary_cross_entropy", "BCELoss")

AUTOCAST = {
    "torch.autocast": None, "torch.amp.autocast": None, "torch.amp.autocast_mode.autocast": None,
    "torch.cuda.amp.autocast": "cuda", "torch.cuda.amp.autocast_mode.autocast": "cuda",
    "torch.cpu.amp.autocast": "cpu", "torch.cpu.amp.autocast_mode.autocast": "cpu",
}
GRAD_SCALER = {"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.cuda.amp.GradScaler",
               "torch.cuda.amp.grad_scaler.GradScaler", "torch.cpu.amp.GradScaler",
               "torch.cpu.amp.grad_scaler.GradScaler"}
# deprecated spelling -> (device, the torch.amp name)
DEPRECATED = {
    f"torch.{dev}.amp.{mod}{name}": (dev, name)
    for dev in ("cuda", "cpu")
    for name, mods in (("autocast", ("", "autocast_mode.")), ("GradScaler", ("", "grad_scaler.")),
                       ("custom_fwd", ("", "autocast_mode.")), ("custom_bwd", ("", "autocast_mode.")))
    for mod in mods
    if not (dev == "cpu" and name in ("custom_fwd", "custom_bwd"))
}
# the current spellings: a deprecated name next to one of these is a fallback for an older torch
MODERN = {"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast", "torch.amp.GradScaler",
          "torch.amp.grad_scaler.GradScaler", "torch.amp.custom_fwd", "torch.amp.custom_bwd",
          "torch.amp.autocast_mode.custom_fwd", "torch.amp.autocast_mode.custom_bwd"}
BCE_FUNCTION = "torch.nn.functional.binary_cross_entropy"
BCE_MODULE = "torch.nn.BCELoss"
SIGMOID = {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"}
DEFAULT_DTYPE = {"cuda": "float16", "cpu": "bfloat16"}


@dataclass
class Region:
    """One enabled autocast region: the ``with`` item's call, its device and dtype (None: unknown)."""

    call: ast.Call
    device: str | None
    dtype: str | None


class SyntaxScope:
    """The part of the interpreter's ``Scope`` a syntactic rule needs: source text and imports."""

    def __init__(self, fa):
        self.fa = fa
        self.compute = fa.compute
        self.regime = ""

    def seg(self, node: ast.AST | None) -> str:
        return self.fa.seg(node)

    def source(self, node: ast.AST) -> str:
        return self.fa.segment(node) or ast.unparse(node)

    def import_torch_edit(self) -> list:
        if self.fa.names.aliases.get("torch") == "torch":
            return []
        return [(None, "import", "import torch\n")]


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _walk_scope(body: list[ast.stmt]):
    """Every node of a scope's statements, not entering nested functions, classes or lambdas."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


@dataclass
class ScopeFacts:
    """What one scope does with autocast, GradScaler, backward, half models and BCE."""

    regions: list[Region] = field(default_factory=list)
    in_region: dict[int, Region] = field(default_factory=dict)  # id(node) -> innermost enabled region
    assigned: dict[str, list[ast.AST]] = field(default_factory=dict)  # name -> assignment value nodes
    scalers: dict[str, ast.Call] = field(default_factory=dict)  # name or attribute text -> GradScaler(...)
    scaler_calls: list[ast.Call] = field(default_factory=list)  # every GradScaler(...) made here
    scaled: list[ast.Call] = field(default_factory=list)  # `X.scale(loss)` calls feeding a backward
    backwards: list[ast.Call] = field(default_factory=list)
    steps: list[ast.Call] = field(default_factory=list)  # `S.step(opt)` / `S.unscale_(opt)`
    halves: dict[str, ast.AST] = field(default_factory=dict)  # model text -> its conversion node
    optimizers: dict[str, str] = field(default_factory=dict)  # optimizer text -> model text
    calls: list[ast.Call] = field(default_factory=list)


class AmpPass:
    def __init__(self, fa):
        self.fa = fa
        self.names = fa.names
        self.scope = SyntaxScope(fa)
        self.events: list[SinkEvent] = []
        self.local_aliases: dict[str, str] = {}
        self.compat_names = self._compat_imports(fa.tree.body)
        # words whose absence from a function's text means it uses no AMP API (module aliases included)
        amp_targets = set(AUTOCAST) | GRAD_SCALER | set(DEPRECATED) | MODERN | {BCE_FUNCTION, BCE_MODULE}
        self.words = TRIGGER_WORDS + tuple(a for a, q in fa.names.aliases.items() if q in amp_targets)
        self.init_facts = ScopeFacts()  # of the class being scanned
        self.bce_attrs: set[str] = set()  # `self.x` texts bound to an nn.BCELoss in this class
        self.bce_globals: set[str] = {t.id for node in fa.tree.body if isinstance(node, ast.Assign)
                                      and isinstance(node.value, ast.Call) and self.qualify(node.value.func) == BCE_MODULE
                                      for t in node.targets if isinstance(t, ast.Name)}

    # -- names ---------------------------------------------------------------------------------
    def qualify(self, node: ast.AST) -> str | None:
        """The dotted name of a Name/Attribute chain, seeing the current function's own imports first."""
        parts: list[str] = []
        head = node
        while isinstance(head, ast.Attribute):
            parts.append(head.attr)
            head = head.value
        if isinstance(head, ast.Name) and head.id in self.local_aliases:
            return ".".join([self.local_aliases[head.id]] + parts[::-1])
        return self.names.qualify(node)

    def text(self, node: ast.AST) -> str:
        return ast.unparse(node)

    # -- the walk ------------------------------------------------------------------------------
    def run(self) -> list[SinkEvent]:
        self.scan_scope(self.fa.tree, self.fa.tree.body, None)
        return self.events

    def relevant(self, owner: ast.AST) -> bool:
        """Whether the source of a function or class mentions an AMP name (a cheap text test)."""
        first = min([owner.lineno] + [d.lineno for d in getattr(owner, "decorator_list", ())])
        text = "\n".join(self.fa.lines[first - 1:owner.end_lineno])
        return any(w in text for w in self.words)

    def scan_scope(self, owner: ast.AST, body: list[ast.stmt], cls: ast.ClassDef | None) -> None:
        if owner is not self.fa.tree and not self.relevant(owner) \
                and not (cls is not None and owner is not cls and self.init_facts.scalers):
            return  # a method of a class whose __init__ makes a scaler may step it (DTL203)
        saved_aliases = dict(self.local_aliases)
        for node in _walk_scope(body):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and owner is not self.fa.tree:
                self._local_import(node)
        facts = ScopeFacts()
        self._collect(body, facts, None)
        self._emit(owner, facts)
        for node in _walk_scope(body):
            if isinstance(node, ast.ClassDef):
                if not self.relevant(node):
                    continue
                saved = self.bce_attrs, self.init_facts
                self.bce_attrs = self._bce_attributes(node)
                self.init_facts = self._init_facts(node)
                self.scan_scope(node, node.body, node)
                self.bce_attrs, self.init_facts = saved
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not owner:
                self.scan_scope(node, node.body, cls)
        self.local_aliases = saved_aliases

    def _local_import(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    self.local_aliases[a.asname] = a.name
                else:
                    self.local_aliases[a.name.split(".")[0]] = a.name.split(".")[0]
        elif node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    self.local_aliases[a.asname or a.name] = f"{node.module}.{a.name}"

    def _init_facts(self, cls: ast.ClassDef) -> ScopeFacts:
        """What ``__init__`` binds to ``self.`` attributes: scalers, optimizers and float16-converted models."""
        facts = ScopeFacts()
        init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if init is not None:
            self._collect(init.body, facts, None)
        own = lambda d: {k: v for k, v in d.items() if k.startswith("self.")}  # noqa: E731
        return ScopeFacts(scalers=own(facts.scalers), optimizers=own(facts.optimizers), halves=own(facts.halves))

    def _bce_attributes(self, cls: ast.ClassDef) -> set[str]:
        out = set()
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and self.qualify(node.value.func) == BCE_MODULE:
                out |= {self.text(t) for t in node.targets if isinstance(t, ast.Attribute)}
        return out

    def autocast_region(self, call: ast.AST) -> Region | None | bool:
        """The region a ``with`` item opens: a Region, False for a disabled autocast, None if not autocast."""
        if not isinstance(call, ast.Call):
            return None
        q = self.qualify(call.func)
        if q not in AUTOCAST:
            return None
        fixed = AUTOCAST[q]
        if fixed is None:
            dev_node = call.args[0] if call.args else _kw(call, "device_type")
            device = dev_node.value if isinstance(dev_node, ast.Constant) and isinstance(dev_node.value, str) else None
            dt_node = call.args[1] if len(call.args) > 1 else _kw(call, "dtype")
            en_node = call.args[2] if len(call.args) > 2 else _kw(call, "enabled")
        else:
            device = fixed
            dt_node = call.args[1] if len(call.args) > 1 else _kw(call, "dtype")
            en_node = call.args[0] if call.args else _kw(call, "enabled")
        if _is_false(en_node):
            return False
        if dt_node is None or (isinstance(dt_node, ast.Constant) and dt_node.value is None):
            dtype = DEFAULT_DTYPE.get(device or "")
        else:
            dtype = dtype_of_expr(dt_node, _Qualifier(self))
            if dtype not in ("float16", "bfloat16"):
                dtype = None
        return Region(call, device, dtype)

    def _collect(self, body: list[ast.stmt], facts: ScopeFacts, region: Region | None) -> None:
        for stmt in body:
            self._collect_node(stmt, facts, region)

    def _collect_node(self, node: ast.AST, facts: ScopeFacts, region: Region | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return
        if region is not None:
            facts.in_region[id(node)] = region
        if isinstance(node, (ast.With, ast.AsyncWith)):
            inner = region
            for item in node.items:
                self._collect_node(item.context_expr, facts, region)
                r = self.autocast_region(item.context_expr)
                if r is False:
                    inner = None
                elif r is not None:
                    facts.regions.append(r)
                    inner = r
            self._collect(node.body, facts, inner)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        facts.assigned.setdefault(n.id, []).append(node.value)
                if isinstance(node.value, ast.Call):
                    self._note_assignment(self.text(t), node.value, facts)
        if isinstance(node, ast.Call):
            self._note_call(node, facts)
        for child in ast.iter_child_nodes(node):
            self._collect_node(child, facts, region)

    def _note_assignment(self, target: str, call: ast.Call, facts: ScopeFacts) -> None:
        if self.qualify(call.func) in GRAD_SCALER:
            facts.scalers[target] = call
        converted = self._half_conversion(call)
        if converted is not None:
            # `model = Net().half()`: the target is the converted model
            facts.halves[target] = call
        for n in ast.walk(call):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                    and n.func.attr in ("parameters", "named_parameters"):
                facts.optimizers[target] = self.text(n.func.value)
                break

    def _half_conversion(self, call: ast.Call) -> ast.AST | None:
        """The module converted by ``m.half()`` / ``m.to(torch.float16)`` / ``m.type(torch.half)``."""
        if not isinstance(call.func, ast.Attribute):
            return None
        attr = call.func.attr
        if attr == "half" and not call.args and not call.keywords:
            return call.func.value
        if attr in ("to", "type"):
            cands = list(call.args) + [k.value for k in call.keywords if k.arg in ("dtype", None)]
            if any(dtype_of_expr(c, _Qualifier(self)) == "float16" for c in cands):
                return call.func.value
        return None

    def _note_call(self, call: ast.Call, facts: ScopeFacts) -> None:
        facts.calls.append(call)
        q = self.qualify(call.func)
        if q in GRAD_SCALER:
            facts.scaler_calls.append(call)
        if not isinstance(call.func, ast.Attribute):
            return
        attr = call.func.attr
        recv = call.func.value
        if attr == "backward":
            facts.backwards.append(call)
            if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) and recv.func.attr == "scale":
                facts.scaled.append(recv)
        elif attr in ("step", "unscale_") and len(call.args) == 1:
            facts.steps.append(call)
        converted = self._half_conversion(call)
        if converted is not None and not isinstance(converted, ast.Call):
            # `model.half()` as a statement converts the module in place
            facts.halves.setdefault(self.text(converted), call)

    def scaler_enabled(self, call: ast.Call) -> ast.AST | None:
        """The ``enabled`` argument: 6th positional of ``torch.amp.GradScaler(device, ...)``, 5th of the old forms."""
        pos = 5 if self.qualify(call.func) in ("torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler") else 4
        return call.args[pos] if len(call.args) > pos else _kw(call, "enabled")

    def scaler_disabled(self, call: ast.Call) -> bool:
        """``enabled=`` given and not literally True: the scaler is off, or switched by the caller."""
        en = self.scaler_enabled(call)
        return en is not None and not (isinstance(en, ast.Constant) and en.value is True)

    # -- events --------------------------------------------------------------------------------
    def emit(self, kind: str, node: ast.AST, sink: str, owner: ast.AST, **detail) -> None:
        self.events.append(SinkEvent(kind=kind, regime="", node=node, sink=sink, operands=(), ac=False, cond=(),
                                     scope=self.scope, root=id(owner), depth=0, detail=detail))

    def _emit(self, owner: ast.AST, facts: ScopeFacts) -> None:
        self._emit_deprecated(owner, facts)
        self._emit_backward(owner, facts)
        self._emit_steps(owner, facts)
        self._emit_losses(owner, facts)
        self._emit_scalers(owner, facts)

    def _emit_deprecated(self, owner: ast.AST, facts: ScopeFacts) -> None:
        calls = {id(c.func): c for c in facts.calls}
        decorated = set()
        if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            decorated = {id(d) for d in owner.decorator_list}
        nodes = list(_walk_scope(owner.body if owner is not self.fa.tree else self.fa.tree.body))
        if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in owner.decorator_list:
                nodes.extend(ast.walk(d))
                for c in ast.walk(d):
                    if isinstance(c, ast.Call):
                        calls[id(c.func)] = c
        found = [(node, q) for node in nodes if isinstance(node, (ast.Name, ast.Attribute))
                 and not isinstance(node.ctx, ast.Store) and (q := self.qualify(node)) in DEPRECATED
                 and _head(node) not in self.compat_names]
        if not found:
            return
        fallback = self._fallbacks([owner] + nodes)
        probes = {id(x) for n in nodes if isinstance(n, ast.Try) and any(_catches_missing(h) for h in n.handlers)
                  for top in n.body for x in ast.walk(top)}
        for node, q in found:
            if id(node) in fallback:
                continue
            if id(node) not in calls and id(node) not in decorated and id(node) in probes:
                continue  # `_ = torch.cpu.amp.autocast` under `except AttributeError`: a feature probe, not a use
            device, new = DEPRECATED[q]
            self.emit("amp-api", node, q, owner, qname=q, device=device, new=new, call=calls.get(id(node)),
                      decorator=id(node) in decorated)

    def uses_modern(self, nodes) -> bool:
        return any(isinstance(n, (ast.Name, ast.Attribute)) and self.qualify(n) in MODERN
                   for top in nodes for n in ast.walk(top))

    def _fallbacks(self, nodes) -> set[int]:
        """Nodes on a branch that runs only where the ``torch.amp`` spelling is missing (an older torch): the
        handlers of a ``try`` whose body uses it, the other arm of an ``if`` / conditional expression that does."""
        out: set[int] = set()
        for n in nodes:
            arms: list[tuple[list, list]] = []
            if isinstance(n, ast.Try):
                arms.append((n.body, n.handlers))
            elif isinstance(n, ast.If):
                arms += [(n.body, n.orelse), (n.orelse, n.body)]
            elif isinstance(n, ast.IfExp):
                arms += [([n.body], [n.orelse]), ([n.orelse], [n.body])]
            for modern, other in arms:
                if modern and self.uses_modern(modern):
                    out |= {id(x) for top in other for x in ast.walk(top)}
            # `if <new API available>: return <new form>` followed by the old form
            for name in ("body", "orelse", "finalbody"):
                block = getattr(n, name, None)
                if not isinstance(block, list):
                    continue
                for i, stmt in enumerate(block):
                    if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise)) \
                            and self.uses_modern(stmt.body):
                        out |= {id(x) for top in block[i + 1:] for x in ast.walk(top)}
                        break
        return out

    def _compat_imports(self, body: list[ast.stmt]) -> set[str]:
        """Names a ``try: from torch.amp import X`` binds whose ``except`` re-imports them from the old module."""
        out: set[str] = set()
        for node in _walk_scope(body):
            if not isinstance(node, ast.Try):
                continue
            modern = {a.asname or a.name for n in node.body if isinstance(n, ast.ImportFrom)
                      and (n.module or "").startswith("torch.amp") for a in n.names}
            for h in node.handlers:
                for n in h.body:
                    if isinstance(n, ast.ImportFrom) and n.module in ("torch.cuda.amp", "torch.cpu.amp"):
                        out |= {a.asname or a.name for a in n.names} & modern
        return out

    def _derived(self, facts: ScopeFacts) -> set[str]:
        """Names whose value comes from a float16 autocast region (assigned there, or from such names)."""
        derived = {n for n, values in facts.assigned.items()
                   if any(_fp16(facts.in_region.get(id(v))) for v in values)}
        changed = True
        while changed:
            changed = False
            for n, values in facts.assigned.items():
                if n not in derived and any(_names_in(v) & derived for v in values):
                    derived.add(n)
                    changed = True
        return derived

    def _emit_backward(self, owner: ast.AST, facts: ScopeFacts) -> None:
        fp16 = [r for r in facts.regions if _fp16(r)]
        if not fp16 or not facts.backwards:
            return
        scaled_names = {n for n, values in facts.assigned.items()
                        if any(isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "scale"
                               for v in values)}
        derived = self._derived(facts)
        for call in facts.backwards:
            recv = call.func.value
            if call.args or any(k.arg not in ("retain_graph", "create_graph", "inputs") for k in call.keywords):
                continue  # `engine.backward(loss)`: not a tensor's backward
            inside = facts.in_region.get(id(call))
            from_region = _fp16(inside) or bool(_names_in(recv) & derived)
            if not from_region:
                continue
            region = inside if _fp16(inside) else fp16[0]
            self.emit("amp-backward", call, "backward", owner, region=region,
                      scaled=bool(facts.scaled) or bool(_names_in(recv) & scaled_names),
                      scaler=bool(facts.scaler_calls) or bool(facts.scalers))

    def _emit_steps(self, owner: ast.AST, facts: ScopeFacts) -> None:
        init = self.init_facts if owner is not self.fa.tree else ScopeFacts()
        scalers = {**init.scalers, **facts.scalers}
        optimizers = {**init.optimizers, **facts.optimizers}
        seen = set()
        for call in facts.steps:
            scaler = self.text(call.func.value)
            if scaler not in scalers or _is_false(self.scaler_enabled(scalers[scaler])):
                continue
            opt = self.text(call.args[0])
            model = optimizers.get(opt)
            if model is None or (scaler, opt) in seen:
                continue
            seen.add((scaler, opt))
            conversion = facts.halves.get(model)
            if conversion is not None and (conversion.lineno, conversion.col_offset) > (call.lineno, call.col_offset):
                conversion = None  # converted after the step in this scope
            if conversion is None and model not in facts.halves:
                conversion = init.halves.get(model)  # converted in __init__, before any method runs
            if conversion is not None:
                self.emit("amp-scaler-step", call, f"{scaler}.{call.func.attr}", owner, model=model,
                          conversion=conversion, scaler_call=scalers[scaler])

    def _emit_losses(self, owner: ast.AST, facts: ScopeFacts) -> None:
        for call in facts.calls:
            region = facts.in_region.get(id(call))
            if region is None:
                continue
            q = self.qualify(call.func)
            inline_module = isinstance(call.func, ast.Call) and self.qualify(call.func.func) == BCE_MODULE
            named_module = isinstance(call.func, (ast.Name, ast.Attribute)) and (
                self.text(call.func) in self.bce_attrs
                or (isinstance(call.func, ast.Name) and self._bound_to_bce(call.func.id, facts)))
            if q != BCE_FUNCTION and not inline_module and not named_module:
                continue
            arg = call.args[0] if call.args else _kw(call, "input")
            self.emit("amp-loss", call, "F.binary_cross_entropy" if q == BCE_FUNCTION else "nn.BCELoss", owner,
                      region=region, function=q == BCE_FUNCTION, inline_module=inline_module,
                      logits=self.sigmoid_input(arg))

    def _bound_to_bce(self, name: str, facts: ScopeFacts) -> bool:
        values = facts.assigned.get(name)
        if values:
            return all(isinstance(v, ast.Call) and self.qualify(v.func) == BCE_MODULE for v in values)
        return name in self.bce_globals

    def sigmoid_input(self, arg: ast.AST | None) -> ast.AST | None:
        """``x`` of a literal ``torch.sigmoid(x)`` / ``F.sigmoid(x)`` / ``x.sigmoid()`` argument."""
        if not isinstance(arg, ast.Call) or arg.keywords:
            return None
        if self.qualify(arg.func) in SIGMOID and len(arg.args) == 1 and not isinstance(arg.args[0], ast.Starred):
            return arg.args[0]
        if isinstance(arg.func, ast.Attribute) and arg.func.attr == "sigmoid" and not arg.args \
                and self.qualify(arg.func) is None:
            return arg.func.value
        return None

    def _emit_scalers(self, owner: ast.AST, facts: ScopeFacts) -> None:
        if not facts.regions or any(r.dtype != "bfloat16" for r in facts.regions):
            return
        made = [c for c in facts.scaler_calls if not self.scaler_disabled(c)]
        for c in made:
            self.emit("amp-scaler", c, "GradScaler", owner, region=facts.regions[0], made=True)
        if not made:
            for c in facts.scaled:
                self.emit("amp-scaler", c, "scale", owner, region=facts.regions[0], made=False)


def _catches_missing(handler: ast.ExceptHandler) -> bool:
    """An ``except`` that catches a missing attribute or module (a feature probe's handler)."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in ("AttributeError", "ImportError", "ModuleNotFoundError")
               for k in kinds)


def _head(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _fp16(region: Region | None) -> bool:
    return region is not None and region.dtype == "float16"


class _Qualifier:
    """``Names``-like view that sees function-local imports too (for ``dtype_of_expr``)."""

    def __init__(self, amp: AmpPass):
        self.amp = amp

    def qualify(self, node: ast.AST) -> str | None:
        return self.amp.qualify(node)


def mentions_amp(text: str) -> bool:
    return any(w in text for w in TRIGGER_WORDS)


def amp_events(fa) -> list[SinkEvent]:
    """The AMP usage events of one file (none when it mentions no AMP API)."""
    if not mentions_amp(fa.text):
        return []
    return AmpPass(fa).run()
