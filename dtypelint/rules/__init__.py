"""The hazard rules: one small module per rule, judging the analysis's sink events.

``check(ctx)`` is the engine's entry: it runs the analysis on the parsed file (which
emits sink events), lets each enabled rule judge the events of the kinds it reads
(``KINDS``), keeps the findings that hold in context (``aggregate``) and renders them
as diagnostics (``render``).  Adding a rule means one module here (found by its
``dtlNNN_`` name) plus its catalog file in ``rules/`` at the top of the repository.
"""

from __future__ import annotations

import importlib
import pkgutil
import re


def _rule_modules() -> dict:
    """Every ``dtlNNN_slug`` module of this package, by its code (a new rule registers itself by existing)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if re.fullmatch(r"dtl\d+_\w+", m.name))
    modules = [importlib.import_module(f"{__name__}.{name}") for name in names]
    return {m.CODE: m for m in modules}


RULES = _rule_modules()
RULE_CODES = tuple(RULES)


def analyse(text: str, filename: str, module_name: str, settings, index=None, enabled=None,
            is_package: bool = False, path=None, tree=None):
    """Diagnostics of one file's text (the analysis, then the rules)."""
    from dtypelint import analysis
    from dtypelint.rules.aggregate import select
    from dtypelint.rules.render import to_diagnostics

    kinds = {k for code, rule in RULES.items() if enabled is None or code in enabled for k in rule.KINDS}
    result = analysis.analyse(text, filename, module_name, settings, index, is_package=is_package, path=path,
                              tree=tree, interpret=any(not k.startswith("amp-") for k in kinds),
                              amp=any(k.startswith("amp-") for k in kinds))
    if result is None:
        return []
    judged = select(result.events, RULES, enabled, result.fa.called, result.fa.executions)
    return distinct(to_diagnostics(result.fa, judged))


def distinct(diags: list) -> list:
    """One diagnostic per line for findings a reader cannot tell apart (the same rule, message and path: two calls
    of one layer on one line, ``f(g(x)) if c else g(x)``); a fix run reaches the other on its next pass."""
    seen: set = set()
    out = []
    for d in diags:
        key = (d.code, d.start.row, d.message, tuple((s.row, s.message) for s in d.path))
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def check(ctx) -> list:
    enabled = ctx.enabled
    if enabled is not None and not any(c in enabled for c in RULE_CODES):
        return []
    is_package = ctx.path is not None and ctx.path.name == "__init__.py"
    return analyse(ctx.source.text, ctx.filename, ctx.module_name, ctx.settings, ctx.index, enabled, is_package,
                   ctx.path, getattr(ctx, "tree", None))
