"""From judged events to findings: context, paths and duplicates.

Every function is interpreted on its own (its tensor parameters assumed to be
activations in the compute dtype) and, when the file calls it, again with each
caller's actual arguments.  A finding made only under the assumption is dropped when
a caller's context shows the sink is fine there (every operand known and compatible),
so a deliberate fp32 path (a time embedding into a module kept in fp32) stays quiet.
A sink judged on several paths is reported once per (rule, regime, position); when
some evaluations of it were fine, the clauses of the breaking path say when it breaks.
"""

from __future__ import annotations

from dataclasses import dataclass

from dtypelint.rules.base import CLEAN, Finding


@dataclass
class Judged:
    finding: Finding
    condition: tuple[str, ...]  # clauses of the breaking path ('' when every evaluation breaks)


def judge_events(events, rules: dict[str, object], enabled):
    by_kind: dict[str, list] = {}
    for code, rule in rules.items():
        if enabled is not None and code not in enabled:
            continue
        for k in rule.KINDS:
            by_kind.setdefault(k, []).append(rule)
    findings: list[Finding] = []
    clean: set[tuple] = set()
    clean_at_entry: set[tuple] = set()
    evaluated: dict[tuple, list] = {}  # (regime, node, root) -> [(verdict, cond)]
    for e in events:
        for rule in by_kind.get(e.kind, ()):
            v = rule.judge(e)
            evaluated.setdefault((rule.CODE, e.regime, id(e.node), e.root), []).append((v, e.cond))
            if v is CLEAN:
                if e.depth == 0:
                    clean_at_entry.add((e.regime, id(e.node), e.root))
                else:
                    clean.add((e.regime, id(e.node)))
            elif isinstance(v, Finding):
                findings.append(v)
    return findings, clean, clean_at_entry, evaluated


def select(events, rules: dict[str, object], enabled, called: set, executions: dict | None = None) -> list[Judged]:
    findings, clean, clean_at_entry, evaluated = judge_events(events, rules, enabled)
    for regime, nid, fid in clean_at_entry:
        if (regime, fid) not in called:
            clean.add((regime, nid))
    out: list[Judged] = []
    seen: set[tuple] = set()
    for f in findings:
        e = f.event
        rule = rules[f.code]
        if (e.regime, e.root) in called and not (rule.CONTEXT_CHECKED and (e.regime, id(e.node)) not in clean):
            continue
        key = (f.code, e.regime, id(e.node))
        if key in seen:
            continue
        seen.add(key)
        runs = [outer + clauses + extra for outer, clauses, extra in (executions or {}).get((e.regime, e.root, e.stmt), [])]
        clauses = breaking_clauses(f, evaluated.get((f.code, e.regime, id(e.node), e.root), []), runs)
        if any(c.on_shape for c in clauses) or any(s.kind == "shape" for s in f.prov):
            continue  # it breaks only where a tensor's rank decides, which the analysis does not know
        out.append(Judged(f, tuple(c.text for c in clauses)))
    return out


def breaking_clauses(f: Finding, evaluations: list, runs: list) -> list:
    """The clauses every breaking evaluation shares and some run of the statement did not have.

    ``runs`` are the path conditions under which the sink's statement ran (a path on which a
    callee chosen at run time is not strict runs it without reaching the sink)."""
    breaking = [set(cond) for v, cond in evaluations if isinstance(v, Finding)]
    if not breaking:
        return []
    common = set.intersection(*breaking)
    everywhere = set.intersection(*([set(c) for c in runs] + [set(cond) for _, cond in evaluations]))
    return [c for c in f.event.cond if c in common and c not in everywhere]
