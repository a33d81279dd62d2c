"""The hazard rules: one small module per rule, judging the analysis's sink events.

``check(ctx)`` is the engine's entry: it runs the analysis on the parsed file (which
emits sink events), lets each enabled rule judge the events of the kinds it reads
(``KINDS``), keeps the findings that hold in context (``aggregate``) and renders them
as diagnostics (``render``).  Adding a rule means one module here plus its catalog
file in ``rules/`` at the top of the repository.
"""

from __future__ import annotations

from dtypelint.rules import (
    dtl101_mixed_dtype_matmul,
    dtl102_mixed_dtype_attention,
    dtl103_fp32_into_half_only_kernel,
    dtl104_fp32_module_output_in_residual,
    dtl105_mixed_dtype_index_put,
    dtl106_fp16_overflow_constant,
    dtl110_default_dtype_factory,
    dtl111_fp32_position_table,
    dtl112_fp32_island,
    dtl113_fp32_softmax_meets_low,
)

RULES = {m.CODE: m for m in (
    dtl101_mixed_dtype_matmul,
    dtl102_mixed_dtype_attention,
    dtl103_fp32_into_half_only_kernel,
    dtl104_fp32_module_output_in_residual,
    dtl105_mixed_dtype_index_put,
    dtl106_fp16_overflow_constant,
    dtl110_default_dtype_factory,
    dtl111_fp32_position_table,
    dtl112_fp32_island,
    dtl113_fp32_softmax_meets_low,
)}
RULE_CODES = tuple(RULES)


def analyse(text: str, filename: str, module_name: str, settings, index=None, enabled=None,
            is_package: bool = False, path=None, tree=None):
    """Diagnostics of one file's text (the analysis, then the rules)."""
    from dtypelint import analysis
    from dtypelint.rules.aggregate import select
    from dtypelint.rules.render import to_diagnostics

    result = analysis.analyse(text, filename, module_name, settings, index, is_package=is_package, path=path,
                              tree=tree)
    if result is None:
        return []
    judged = select(result.events, RULES, enabled, result.fa.called, result.fa.executions)
    return to_diagnostics(result.fa, judged)


def check(ctx) -> list:
    enabled = ctx.enabled
    if enabled is not None and not any(c in enabled for c in RULE_CODES):
        return []
    is_package = ctx.path is not None and ctx.path.name == "__init__.py"
    return analyse(ctx.source.text, ctx.filename, ctx.module_name, ctx.settings, ctx.index, enabled, is_package,
                   ctx.path, getattr(ctx, "tree", None))
