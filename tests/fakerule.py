"""A stand-in rule for integration tests, until the real DTL1xx analysis lands.

DTL999 ``test-hazard`` flags every ``torch.mm(`` call, with a two-step dataflow
path (the nearest ``.float()`` above it, then the call) and a safe fix that
rewrites it to ``torch.matmul(``.  A text containing ``FAKE_NATIVE_CRASH`` kills
the process analysing it and ``FAKE_ENDLESS_ANALYSIS`` never finishes (for the
LSP's isolation tests).  ``install()`` adds it to the catalog and
replaces ``dtypelint.rules.check`` (the real rules are silent while it is installed); ``python tests/fakerule.py ARGS`` runs the
dtypelint CLI with it installed (for subprocess tests: LSP, CLI).
"""

from __future__ import annotations

import re
import sys

CODE = "DTL999"
NAME = "test-hazard"
_CALL = re.compile(r"torch\.mm\(")


def spec():
    from dtypelint.catalog import RuleSpec

    return RuleSpec(
        code=CODE, name=NAME, summary="A test rule: `torch.mm` with mixed dtypes.", severity="error",
        regimes=("autocast", "half"), fix="always", fix_title="Use `torch.matmul`", default=True,
        docs={"what_it_does": "Flags `torch.mm` calls (test stand-in).",
              "why_is_this_bad": "Its operands may have different dtypes.",
              "example": "torch.mm(a.float(), b)", "use_instead": "torch.matmul(a, b)"},
        invalid=(), valid=(),
    )


def fake_check(ctx):
    from dtypelint.diagnostics import Diagnostic, Edit, Fix, PathStep, Position, rule_url

    import os
    import time

    if "FAKE_PRINT" in ctx.source.text:  # analysis code that prints must not corrupt the LSP stream
        print("Content-Length: 5\r\n\r\nnoise")
        os.write(1, b"raw noise on fd 1\n")
    if "FAKE_NATIVE_CRASH" in ctx.source.text:  # simulates the native parser dying on pathological input
        os._exit(70)
    if "FAKE_ENDLESS_ANALYSIS" in ctx.source.text:
        time.sleep(3600)
    out = []
    lines = ctx.source.text.splitlines()
    last_float = None
    for row, line in enumerate(lines, 1):
        if ".float()" in line and not line.lstrip().startswith("#"):
            last_float = (row, line.index(".float()") + 1)
        for m in _CALL.finditer(line):
            col = m.start() + 1
            end = Position(row, col + len("torch.mm"))
            path = []
            if last_float:
                path.append(PathStep(ctx.filename, last_float[0], last_float[1], "`.float()` makes this operand fp32"))
            path.append(PathStep(ctx.filename, row, col, "`torch.mm` requires equal dtypes"))
            out.append(Diagnostic(
                code=CODE, name=NAME, message="`torch.mm` receives an fp32 and a low-precision operand",
                severity="error", filename=ctx.filename, start=Position(row, col), end=end,
                regimes=("autocast", "half"), path=tuple(path),
                fix=Fix("safe", "Use `torch.matmul`", (Edit("torch.matmul", Position(row, col), end),)),
                url=rule_url(CODE, NAME),
            ))
    return out


def install():
    from dtypelint import analysis, rules
    from dtypelint.catalog import load_catalog

    load_catalog()[CODE] = spec()
    original = rules.check
    if getattr(original, "_fake", False):
        return lambda: None

    def check(ctx):  # the stand-in alone: tests of the integrations do not depend on the real rules
        return fake_check(ctx) if CODE in ctx.enabled else []

    check._fake = True
    rules.check = check
    original_filter = analysis.might_contain_hazard
    analysis.might_contain_hazard = lambda text, settings: "torch" in text

    def uninstall():
        rules.check = original
        analysis.might_contain_hazard = original_filter
        load_catalog().pop(CODE, None)

    return uninstall


if __name__ == "__main__":
    install()
    from dtypelint.cli import main

    sys.argv[0] = "dtypelint"
    main()
