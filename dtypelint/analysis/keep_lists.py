"""``_keep_in_fp32_modules(_strict)``: which parameters a loader keeps in float32 (facts §2.7).

A list is a class attribute of a pretrained-model class.  Python attribute lookup
decides which list a class has: the first class in its MRO that assigns it (a
subclass's list replaces its base's, ``None`` or ``[]`` included).  The loader matches
the list against the parameter names of *that model*, so it applies to the model
class and to the modules it contains, not to every class of the file (a file may hold
several models, and transformers' ``modular_*.py`` templates inherit other models'
lists).  transformers 5.x matches entries with an unanchored regex search; diffusers
(and some 4.x releases) match whole name components.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_REACH = 300


@dataclass(frozen=True)
class KeepLists:
    keep: tuple[str, ...] = ()
    strict: tuple[str, ...] = ()
    by_component: bool = False
    owners: tuple[str, ...] = ()  # the model classes whose lists these are

    def __bool__(self) -> bool:
        return bool(self.keep or self.strict)


class KeepIndex:
    """The keep lists that apply to each class of one file."""

    def __init__(self, fa):
        self.fa = fa
        self._per_class: dict[str, KeepLists] | None = None
        self._reason_cache: dict[tuple, str] = {}

    def effective(self, facts) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None, bool]:
        """(keep, strict, diffusers-style) of a class by attribute lookup through its bases."""
        keep = strict = None
        component = False
        for anc in self.fa.ancestors(facts):
            if keep is None and anc.keep_set:
                keep = anc.keep
            if strict is None and anc.keep_strict_set:
                strict = anc.keep_strict
            if any(b.split(".")[0] == "diffusers" for b in anc.bases):
                component = True
        return keep, strict, component

    def _compute(self) -> dict[str, KeepLists]:
        out: dict[str, KeepLists] = {}
        for _, facts in self.fa.classes.values():
            keep, strict, component = self.effective(facts)
            if not keep and not strict:
                continue
            lists = KeepLists(tuple(keep or ()), tuple(strict or ()), component, (facts.qname,))
            for qname in self._reach(facts):
                cur = out.get(qname)
                if cur is None:
                    out[qname] = lists
                else:
                    out[qname] = KeepLists(tuple(dict.fromkeys(cur.keep + lists.keep)),
                                           tuple(dict.fromkeys(cur.strict + lists.strict)),
                                           cur.by_component or lists.by_component, cur.owners + lists.owners)
        return out

    def _reach(self, model) -> list[str]:
        """The model class and every class reachable through its submodule attributes."""
        seen = [model.qname]
        todo = [model]
        while todo and len(seen) < MAX_REACH:
            facts = todo.pop()
            for anc in self.fa.ancestors(facts):
                for a in anc.attrs:
                    if a.kind != "module":
                        continue
                    for c in (a.cls,) + a.alts + ((a.elem,) if a.elem else ()) + a.chain:
                        if not c or c in seen or c.startswith("torch."):
                            continue
                        seen.append(c)
                        _, sub, _ = self.fa.class_by_qname(c)
                        if sub is not None:
                            todo.append(sub)
        return seen

    def lists_for(self, facts) -> KeepLists:
        if self._per_class is None:
            self._per_class = self._compute()
        if facts is None:
            return KeepLists()
        return self._per_class.get(facts.qname, KeepLists())

    def kept_reason(self, facts, name: str, is_module: bool, compute: str) -> str:
        """Why attribute path ``name`` of a ``facts`` instance is kept fp32 when loaded ('' when not)."""
        key = (getattr(facts, "qname", None), name, is_module, compute)
        if key in self._reason_cache:
            return self._reason_cache[key]
        lists = self.lists_for(facts)
        reason = ""
        if lists:
            target = f"{name}.weight" if is_module else name
            groups = [("_keep_in_fp32_modules_strict", lists.strict)]
            if compute == "float16":
                groups.append(("_keep_in_fp32_modules", lists.keep))
            for attr, entries in groups:
                for e in entries:
                    if lists.by_component:
                        hit = e in target.split(".") or target.startswith(e + ".") or target == e
                    else:
                        hit = re.search(re.escape(e).replace(r"\*", ".*"), target) is not None
                    if hit:
                        reason = f"`{name}` matches `{attr}` entry {e!r}"
                        break
                if reason:
                    break
        self._reason_cache[key] = reason
        return reason

    def maybe_kept(self, facts, name: str, is_module: bool, compute: str) -> bool:
        """An entry that names this parameter under a longer path (``mlp.gate.weight`` for a router
        analysed on its own, whose place in the model is not known): it may or may not be kept."""
        lists = self.lists_for(facts)
        if not lists:
            return False
        target = f"{name}.weight" if is_module else name
        entries = list(lists.strict) + (list(lists.keep) if compute == "float16" else [])
        return any(e.endswith("." + target) or e.endswith("." + name) for e in entries)
