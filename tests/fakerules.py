"""Test-only rules that produce fixes, so the fixer can be tested before (and
independently of) the real analysis.  ``install()`` patches ``dtypelint.analysis``
and registers the fake codes in the catalog; ``python tests/fakerules.py check ...``
runs the real CLI with them installed (worker processes inherit the patch: fork).

Rules (regex over the text; the code is in the catalog only while installed):
- DTL901 safe:   ``-1e9``            -> ``torch.finfo(torch.float16).min`` (+ ``import torch`` when missing)
- DTL902 unsafe: ``.float()``        -> ``.to(torch.float32)``
- DTL903 safe:   ``BREAKME``         -> ``BREAKME(``  (the fixed source does not parse)
- DTL904 safe:   ``aaa``             -> ``aa``        (needs several passes)
- DTL905 safe:   ``-1e9``            -> ``-1e4``      (overlaps DTL901: one wins, the other disappears)
- DTL906 safe:   ``PING`` <-> ``PONG`` (never converges)
- DTL907 safe:   ``NOOP``            -> ``NOOP``      (a fix that changes nothing)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dtypelint import analysis, rules  # noqa: E402
from dtypelint.catalog import RuleSpec, load_catalog  # noqa: E402
from dtypelint.diagnostics import Diagnostic, Edit, Fix, Position, rule_url  # noqa: E402
from dtypelint.fixer.imports import ensure_import  # noqa: E402

RULES = {
    # code: (name, pattern, replacement, applicability, needs torch import)
    "DTL901": ("fake-mask-fill", r"-1e9\b", "torch.finfo(torch.float16).min", "safe", True),
    "DTL902": ("fake-float", r"\.float\(\)", ".to(torch.float32)", "unsafe", False),
    "DTL903": ("fake-breaks", r"\bBREAKME\b", "BREAKME(", "safe", False),
    "DTL904": ("fake-multipass", r"aaa", "aa", "safe", False),
    "DTL905": ("fake-conflict", r"-1e9\b", "-1e4", "safe", False),
    "DTL906": ("fake-pingpong", r"\bPING\b|\bPONG\b", None, "safe", False),
    "DTL907": ("fake-noop", r"\bNOOP\b", "NOOP", "safe", False),
}


def _pos(source, offset: int) -> Position:
    row, col = source.position(offset)
    return Position(row, col)


def fake_check(ctx) -> list[Diagnostic]:
    source = ctx.source
    text = source.text
    out = []
    for code, (name, pattern, repl, applicability, needs_torch) in RULES.items():
        for m in re.finditer(pattern, text):
            new = repl if repl is not None else ("PONG" if m.group(0) == "PING" else "PING")
            edits = [Edit(new, _pos(source, m.start()), _pos(source, m.end()))]
            if needs_torch:
                imp = ensure_import(text, "torch")
                if imp is not None:
                    edits.append(imp)
            out.append(Diagnostic(
                code=code, name=name, message=f"fake finding {m.group(0)!r}", severity="warning",
                filename=ctx.filename, start=_pos(source, m.start()), end=_pos(source, m.end()),
                regimes=("half",), fix=Fix(applicability, f"Replace with `{new}`", tuple(edits)),
                url=rule_url(code, name)))
    return out


_ALL_RULES = dict(RULES)
_SAVED: dict = {}


def install(codes: tuple[str, ...] | None = None) -> None:
    """Patch the analysis with the fake rules (all, or only ``codes``); ``uninstall()`` undoes it."""
    if not _SAVED:
        _SAVED.update(check=rules.check, prefilter=analysis.might_contain_hazard)
    catalog = load_catalog()
    for code, (name, *_rest) in RULES.items():
        if codes is not None and code not in codes:
            continue
        catalog[code] = RuleSpec(code=code, name=name, summary=f"fake rule {name}", severity="warning",
                                 regimes=("half",), fix="always", fix_title="fake", default=True,
                                 docs={}, invalid=(), valid=())
    active = {c: r for c, r in _ALL_RULES.items() if codes is None or c in codes}
    RULES.clear()
    RULES.update(active)
    rules.check = fake_check
    analysis.might_contain_hazard = lambda text, settings: True


def uninstall() -> None:
    if _SAVED:
        rules.check = _SAVED["check"]
        analysis.might_contain_hazard = _SAVED["prefilter"]
        _SAVED.clear()
    catalog = load_catalog()
    for code in _ALL_RULES:
        catalog.pop(code, None)


if __name__ == "__main__":
    import os

    codes = os.environ.get("FAKE_RULES")
    install(tuple(codes.split(",")) if codes else None)
    from dtypelint.cli import main

    sys.argv[0] = "dtypelint"
    main()
