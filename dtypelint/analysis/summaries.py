"""Function summaries for the project index: what a low (or fp32) argument comes back as.

Phase 1 of a run interprets every top-level function and every class ``forward``
of a file on its own (no index), once per regime and argument dtype, and stores
the result dtype with its provenance, plus the parameters the body asserts to
have equal dtypes (a dtype-strict sink).  Phase 2 applies these summaries at call
sites in other files.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field

from dtypelint.analysis.lattice import UNKNOWN, Step, Val, tensor

REGIMES = ("autocast", "half", "loaded")


@dataclass(frozen=True)
class FuncSummary:
    """What a function of another file returns for low/fp32 arguments, per regime.

    Phase 1 stores summaries *lazily*: the results (six interpretations of the body) are computed
    in phase 2 the first time a call site in another file asks for them, from the file's source
    kept in the entry (most summarised functions are never called from another file).  The repr
    (the index digest that dependants' cached results are keyed on) names the source's hash."""

    qname: str
    params: tuple[str, ...]  # positional parameters, without self
    strict: tuple[str, ...]  # parameters asserted to have equal dtypes
    filename: str
    # (regime, argument kind "low"|"fp32", result kind, provenance steps); None: not computed yet
    results: tuple[tuple[str, str, str, tuple[Step, ...]], ...] | None = ()
    module_name: str = ""
    source_key: str = ""  # sha256 of ``source`` (in the repr, so dependants follow the file)
    source: str = field(default="", repr=False, compare=False)

    def get_results(self) -> tuple[tuple[str, str, str, tuple[Step, ...]], ...]:
        if self.results is not None:
            return self.results
        key = (self.filename, self.source_key, self.qname)
        r = _LAZY_RESULTS.get(key)
        if r is None:
            r = _compute_results(self)
            _LAZY_RESULTS[key] = r
        return r


# per-process caches of lazily computed summaries and of the files they come from
_LAZY_RESULTS: dict[tuple[str, str, str], tuple] = {}
_LAZY_FILES: dict[tuple[str, str], tuple] = {}


def source_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def summarisable(fa) -> dict[str, tuple]:
    """qname -> (function node, class facts or None) for the functions a file's summaries cover."""
    out: dict[str, tuple] = {}
    prefix = f"{fa.module_name}." if fa.module_name else ""
    for name, (cnode, facts) in fa.classes.items():
        fwd = next((s for s in cnode.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)
        if fwd is not None:
            out[facts.qname + ".forward"] = (fwd, facts)
    for name, fn in fa.functions.items():
        out[prefix + name] = (fn, None)
    return out


def _compute_results(s: "FuncSummary") -> tuple:
    from dtypelint.analysis.interpreter import FileAnalysis

    fkey = (s.filename, s.source_key)
    entry = _LAZY_FILES.get(fkey)
    if entry is None:
        try:
            tree = ast.parse(s.source)
            fa = FileAnalysis(tree, s.source, s.filename, s.module_name, None, None,
                              is_package=s.filename.endswith("__init__.py"))
            entry = (fa, summarisable(fa))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            entry = (None, {})
        if len(_LAZY_FILES) > 4:
            _LAZY_FILES.clear()
        _LAZY_FILES[fkey] = entry
    fa, fns = entry
    if fa is None or s.qname not in fns:
        return ()
    fn, cls = fns[s.qname]
    try:
        return summarize_function(fa, fn, cls, s.qname).results
    except RecursionError:
        return ()


def lazy_summary(fa, fn: ast.FunctionDef, cls, qname: str, key: str) -> FuncSummary:
    """The index entry of phase 1: parameters and strictness now, results on first use."""
    params = [p.arg for p in fn.args.posonlyargs + fn.args.args]
    if cls is not None and params:
        params = params[1:]
    from dtypelint.analysis.interpreter import strict_params_of

    return FuncSummary(qname, tuple(params), strict_params_of(fn), fa.filename, None, fa.module_name, key, fa.text)


def summarize_function(fa, fn: ast.FunctionDef, cls, qname: str) -> FuncSummary:
    from dtypelint.analysis.interpreter import Frame, strict_params_of

    params = [p.arg for p in fn.args.posonlyargs + fn.args.args]
    if cls is not None and params:
        params = params[1:]
    results = []
    for regime in REGIMES:
        for argkind in ("low", "fp32"):
            frame = Frame(fa, fn, cls, regime, report=False, self_kept="")
            env = {}
            try:
                base = Frame(fa, fn, cls, regime, report=False)
                for p in fn.args.posonlyargs + fn.args.args:
                    env[p.arg] = tensor(argkind)
                for p in fn.args.kwonlyargs:
                    env[p.arg] = UNKNOWN
                if cls is not None and (fn.args.posonlyargs + fn.args.args):
                    env[(fn.args.posonlyargs + fn.args.args)[0].arg] = Val("self")
                if fn.args.vararg:
                    env[fn.args.vararg.arg] = UNKNOWN
                if fn.args.kwarg:
                    env[fn.args.kwarg.arg] = UNKNOWN
                del base
                r = frame.run(env)
            except RecursionError:  # pragma: no cover - defensive
                r = UNKNOWN
            kind = r.kind if r.is_tensor else "unknown"
            prov = r.prov if kind in ("fp32", "fp64") else ()
            results.append((regime, argkind, kind, tuple(prov)))
    return FuncSummary(qname, tuple(params), strict_params_of(fn), fa.filename, tuple(results))


def apply_summary(s: FuncSummary, frame, n: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> Val:
    first = next((v for v in list(args) + list(kwargs.values()) if v.is_tensor), None)
    argkind = "fp32" if first is not None and first.kind in ("fp32", "fp64") else "low"
    for regime, ak, kind, prov in s.get_results():
        if regime == frame.regime and ak == argkind:
            if kind == "unknown":
                return UNKNOWN
            if kind in ("fp32", "fp64"):
                steps = (first.prov if (first is not None and argkind == "fp32") else ()) + prov
                name = s.qname.rsplit(".", 1)[-1]
                steps = steps + (frame.fa.step(n, f"`{name}()` ({s.filename}) returns {'float32' if kind == 'fp32' else 'float64'}"),)
                return tensor(kind, steps)
            return tensor(kind)
    return UNKNOWN
