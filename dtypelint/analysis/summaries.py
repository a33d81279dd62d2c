"""Function summaries for the project index: what a low (or fp32) argument comes back as.

Phase 1 of a run interprets every top-level function and every class ``forward``
of a file on its own (no index), once per regime and argument dtype, and stores
the result dtype with its provenance, plus the parameters the body asserts to
have equal dtypes (a dtype-strict sink).  Phase 2 applies these summaries at call
sites in other files.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from dtypelint.analysis.lattice import UNKNOWN, Step, Val, tensor

REGIMES = ("autocast", "half", "loaded")


@dataclass(frozen=True)
class FuncSummary:
    qname: str
    params: tuple[str, ...]  # positional parameters, without self
    strict: tuple[str, ...]  # parameters asserted to have equal dtypes
    filename: str
    # (regime, argument kind "low"|"fp32", result kind, provenance steps)
    results: tuple[tuple[str, str, str, tuple[Step, ...]], ...] = ()


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
    for regime, ak, kind, prov in s.results:
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
