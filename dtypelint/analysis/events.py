"""Sink events: what the interpreter saw reach an op with a dtype contract.

The interpreter does not decide what is a finding.  Each time an evaluation reaches a
sink (a matmul, an attention kernel, a callee that asserts equal dtypes, an in-place
index write, a fill with a constant, a residual add of a kept module's output) it
emits a ``SinkEvent``: the op, its operands with their abstract values (dtype and
provenance), the regime, whether autocast is on there, and the path condition of the
state it was evaluated in.  Rules (``dtypelint.rules``) turn events into findings and
build fixes with the ``Scope`` the event carries.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from dtypelint.analysis.lattice import Val


class Operand:
    """One input of a sink: its value, the expression (where a cast would go; None for an implicit
    operand such as a layer's weight) and its label, the source text as written (spelled on demand:
    most sinks are fine and never shown)."""

    __slots__ = ("_label", "val", "node", "_fa")

    def __init__(self, label: str | None, val: Val, node: ast.AST | None, fa=None):
        self._label = label
        self.val = val
        self.node = node
        self._fa = fa

    @property
    def label(self) -> str:
        if self._label is None:
            self._label = self._fa.seg(self.node) if self._fa is not None else "?"
        return self._label

    @label.setter
    def label(self, text: str) -> None:
        self._label = text


@dataclass
class SinkEvent:
    kind: str  # matmul | sdpa | equal | half-only | strict | index | fill | residual
    regime: str
    node: ast.AST  # the sink expression (reported position)
    sink: str  # display name of the op (`@`, `F.scaled_dot_product_attention`, `chunk_rwkv7()`)
    operands: tuple[Operand, ...]
    ac: bool  # autocast is on where the sink runs
    cond: tuple  # the path condition of the evaluated state: its Clauses (each with a `.text`)
    scope: "Scope"
    root: int  # id of the entry function whose analysis reached the sink
    depth: int  # 0: the entry function's own body with assumed arguments
    stmt: int = 0  # id of the simple statement being evaluated (its executions are in FileAnalysis.executions)
    detail: dict[str, Any] = field(default_factory=dict)  # kind-specific facts (module class, callee file, ...)


class Scope:
    """What a rule needs to spell a fix at the sink: source text, dtype expressions in scope.

    Built lazily from the frame that emitted the event (its environment is snapshotted)."""

    def __init__(self, frame, env: dict[str, Val]):
        self.fa = frame.fa
        self._frame = frame
        self._env = dict(env)

    # source text and positions
    def seg(self, node: ast.AST | None) -> str:
        return self.fa.seg(node)

    def anchor(self, node: ast.AST | None) -> ast.AST | None:
        return self._frame.anchor(node)

    def dtype_in_scope(self, kind: str) -> list[str]:
        return self._frame.dtype_in_scope(kind, self._env)

    def local_text(self, text: str) -> str:
        return self._frame.local_text(text)

    def import_torch_edit(self) -> list:
        """An edit adding ``import torch`` when the module does not bind ``torch``."""
        if self.fa.names.aliases.get("torch") == "torch":
            return []
        return [(None, "import", "import torch\n")]

    def assignments(self) -> dict[str, list[ast.AST]]:
        return self.fa.assignments(self._frame.fn)

    def parameters(self) -> set[str]:
        """The parameter names of the function the sink is in (names a fix may use anywhere in it)."""
        fn = self._frame.fn
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return set()
        a = fn.args
        return {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}

    @property
    def regime(self) -> str:
        return self._frame.regime

    @property
    def compute(self) -> str:
        return self.fa.compute
