"""Applying text edits (from ``Fix.edits``) to a source text.

Edits are applied back to front so earlier offsets stay valid.  Overlapping edits
are never applied together: the first group (in the order given) wins and the
others are left out, so a conflicting pair can never corrupt code.  An edit that
is identical to one already accepted (same span, same content: e.g. two fixes that
both add ``import torch`` at the same place) is not a conflict; it is applied once.
"""

from __future__ import annotations

from typing import Iterable

from dtypelint.diagnostics import Edit
from dtypelint.source import SourceFile


def edit_span(source: SourceFile, edit: Edit) -> tuple[int, int]:
    return (source.offset(edit.start.row, edit.start.column), source.offset(edit.end.row, edit.end.column))


def overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Half-open spans overlap; two insertions at the same point also conflict."""
    if a[0] == a[1] == b[0] == b[1]:
        return True
    return a[0] < b[1] and b[0] < a[1]


def apply_edit_groups(source: SourceFile, groups: Iterable[tuple[Edit, ...]]) -> tuple[str, list[int]]:
    """Apply groups of edits (one group per fix) atomically per group.

    Returns the new text and the indices of the groups that were applied.  A group
    is skipped entirely if any of its edits overlaps an edit already accepted.
    """
    accepted: list[tuple[int, int, str]] = []
    applied: list[int] = []
    for gi, group in enumerate(groups):
        spans = list(dict.fromkeys((*edit_span(source, e), e.content) for e in group))
        if any(s > t for s, t, _ in spans):
            continue  # an inverted span is a bug in the rule; never apply it
        fresh = [sp for sp in spans if sp not in accepted]
        if any(overlaps((s, t), (a, b)) for s, t, _ in fresh for a, b, _ in accepted):
            continue
        if any(overlaps((s1, t1), (s2, t2)) for i, (s1, t1, _) in enumerate(fresh)
               for (s2, t2, _) in fresh[i + 1:]):
            continue
        accepted.extend(fresh)
        applied.append(gi)
    text = source.text
    for start, end, content in sorted(accepted, key=lambda x: (x[0], x[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied
