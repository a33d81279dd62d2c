"""What became of the values an implicit promotion made float32.

A promotion of a low-precision activation to float32 (``x * torch.ones(d)``, ``q * cos``)
is a hazard only if the float32 result goes on: an explicit upcast for numerics that is
cast back (``(...).to(x.dtype)``, ``.type_as(x)``, a write into a low-precision buffer)
is fine, and a result that reaches an equal-dtype sink is already that sink's finding.
The interpreter records here, per promotion step, whether a value carrying it was cast
back, reached a sink, or was returned in float32 by an entry function (where a caller
meets it); values that combine (``q * cos + rotate_half(q) * sin``) share one fate, since
only the winner's provenance travels on.  Rules read the fate after the whole file has
been interpreted.
"""

from __future__ import annotations

from dtypelint.analysis.lattice import Step


def last_origin(prov) -> str:
    """The kind of the latest tagged float32 source in a provenance ('' when none)."""
    for s in reversed(prov):
        if s.origin:
            return s.origin
    return ""


class Fates:
    def __init__(self) -> None:
        self._parent: dict[Step, Step] = {}
        self._cast: set[Step] = set()  # roots of classes a cast back reached
        self._sunk: set[Step] = set()  # roots of classes that reached a sink with a dtype contract
        self._escaped: set[Step] = set()  # roots of classes returned by an entry function (module output)
        self._events: dict[Step, list] = {}  # promotion step -> its `promote` events (every regime and root)

    def _root(self, s: Step) -> Step:
        r = s
        while self._parent.get(r, r) != r:
            r = self._parent[r]
        while s != r:  # path compression
            s, self._parent[s] = self._parent[s], r
        return r

    @staticmethod
    def promoted(prov) -> list[Step]:
        return [s for s in prov if s.origin == "promoted"]

    def link(self, vals) -> None:
        """Values combined into one result: their promotions share a fate from now on."""
        steps = [s for v in vals for s in self.promoted(v.prov)]
        if len(steps) < 2:
            return
        roots = {self._root(s) for s in steps}
        first = roots.pop()
        for r in roots:
            self._parent[r] = first
            if r in self._cast:
                self._cast.add(first)
            if r in self._sunk:
                self._sunk.add(first)
            if r in self._escaped:
                self._escaped.add(first)

    def cast_back(self, prov) -> None:
        for s in self.promoted(prov):
            self._cast.add(self._root(s))

    def reach_sink(self, prov) -> None:
        for s in self.promoted(prov):
            self._sunk.add(self._root(s))

    def add_event(self, step: Step, event) -> None:
        self._events.setdefault(step, []).append(event)

    def together(self, step: Step) -> list:
        """The `promote` events of every promotion that shares ``step``'s fate (``q * cos`` and
        ``rotate_half(q) * sin`` summed into one value): one hazard, which one finding should name."""
        r = self._root(step)
        return [e for s, evs in self._events.items() if self._root(s) == r for e in evs]

    def escape(self, prov) -> None:
        for s in self.promoted(prov):
            self._escaped.add(self._root(s))

    def of(self, step: Step) -> str:
        """'cast' (cast back somewhere), 'sink' (reached an equal-dtype sink), 'escape' (returned in
        float32 by an entry function: a forward or a public helper) or '' (its fate is not known)."""
        r = self._root(step)
        if r in self._cast:
            return "cast"
        if r in self._sunk:
            return "sink"
        if r in self._escaped:
            return "escape"
        return ""
