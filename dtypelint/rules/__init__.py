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
    dtl107_fp16_silent_inf_constant,
    dtl108_fp16_eps_underflow,
    dtl109_fp16_reduction_overflow,
    dtl110_default_dtype_factory,
    dtl111_fp32_position_table,
    dtl112_fp32_island,
    dtl113_fp32_softmax_meets_low,
    dtl114_module_boundary_dtype_leak,
    dtl115_mixed_dtype_op_inputs,
    dtl201_deprecated_amp_api,
    dtl202_fp16_backward_without_grad_scaler,
    dtl203_grad_scaler_with_half_model,
    dtl204_bce_under_autocast,
    dtl205_grad_scaler_with_bf16_autocast,
)

RULES = {m.CODE: m for m in (
    dtl101_mixed_dtype_matmul,
    dtl102_mixed_dtype_attention,
    dtl103_fp32_into_half_only_kernel,
    dtl104_fp32_module_output_in_residual,
    dtl105_mixed_dtype_index_put,
    dtl106_fp16_overflow_constant,
    dtl107_fp16_silent_inf_constant,
    dtl108_fp16_eps_underflow,
    dtl109_fp16_reduction_overflow,
    dtl110_default_dtype_factory,
    dtl111_fp32_position_table,
    dtl112_fp32_island,
    dtl113_fp32_softmax_meets_low,
    dtl114_module_boundary_dtype_leak,
    dtl115_mixed_dtype_op_inputs,
    dtl201_deprecated_amp_api,
    dtl202_fp16_backward_without_grad_scaler,
    dtl203_grad_scaler_with_half_model,
    dtl204_bce_under_autocast,
    dtl205_grad_scaler_with_bf16_autocast,
)}
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
