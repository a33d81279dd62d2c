"""Loads ``torch_api.toml`` (the one table of torch API knowledge) into lookups."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class EcoDef:
    """A library callable the analysis cannot read but whose dtype behaviour is known (the API table)."""

    name: str
    library: str
    access: str  # subscript | module-call | class-call | class | function
    behaviour: str  # keep | linear | call-first | reduce | einsum
    label: str = ""
    drop_kwargs: tuple[str, ...] = ()


@dataclass(frozen=True)
class SinkDef:
    name: str
    contract: str  # matmul | sdpa | half-only | equal | equal-dtypes (user) | strict (inferred)
    args: tuple[str, ...]
    positions: tuple[int, ...]
    autocast: str = ""  # "casts": autocast casts the inputs to one dtype (no error there)


class TorchAPI:
    def __init__(self, data: dict):
        self.namespaces = tuple(data["namespaces"]["functions"])
        ac = data["autocast"]
        self.ac_lp = frozenset(ac["lower_precision"])
        self.ac_fp32 = frozenset(ac["fp32"])
        self.ac_fp32_opt = frozenset(ac["fp32_unless_dtype"])
        self.ac_promote = frozenset(ac["promote"])
        tr = data["transfer"]
        self.keep = frozenset(tr["keep"])
        self.binary = frozenset(tr["binary"])
        self.split = frozenset(tr["split"])
        self.values_indices = frozenset(tr["values_indices"])
        self.integer = frozenset(tr["integer"])
        self.boolean = frozenset(tr["boolean"])
        self.casts = dict(data["casts"])
        f = data["factories"]
        self.default_float = frozenset(f["default_float"])
        self.arange_like = frozenset(f["arange_like"])
        self.like = frozenset(f["like"])
        self.new = frozenset(f["new"])
        self.dtypes = dict(data["dtypes"])
        m = data["modules"]
        self.module_kind: dict[str, str] = {}
        for kind, names in m.items():
            for n in names:
                self.module_kind[n] = kind
        self.sinks: dict[str, SinkDef] = {}
        for s in data["sinks"]:
            args = tuple(s.get("args", ()))
            for n in s["names"]:
                self.sinks[n] = SinkDef(n, s["contract"], args, tuple(s.get("positions", range(len(args)))),
                                        s.get("autocast", ""))

        # nn modules whose forward argument must share the dtype of one of the module's tensors
        self.module_sinks: dict[str, dict] = {m["class"]: m for m in data.get("module_sinks", ())}

        self.ecosystem: dict[str, EcoDef] = {}
        for e in data.get("ecosystem", ()):
            for n in e["names"]:
                self.ecosystem[n] = EcoDef(n, e["library"], e["access"], e["behaviour"],
                                           e.get("label", n.rsplit(".", 1)[-1]), tuple(e.get("drop_kwargs", ())))

    def ecosystem_module(self, cls: str) -> EcoDef | None:
        """The behaviour of a module instance made from a library callable (``ACT2FN[...]``, ``Conv1D(...)``)."""
        e = self.ecosystem.get(cls)
        if e is not None and e.access in ("subscript", "module-call", "class-call", "class"):
            return e
        return None

    def known_op(self, op: str) -> bool:
        return (op in self.ac_lp or op in self.ac_fp32 or op in self.ac_fp32_opt or op in self.ac_promote
                or op in self.keep or op in self.binary or op in self.split or op in self.values_indices
                or op in self.integer or op in self.boolean or op in self.casts or op in self.default_float
                or op in self.arange_like or op in self.like or op in self.new)

    def torch_op(self, qname: str) -> str | None:
        """Short op name of a torch function (``torch.nn.functional.normalize`` -> ``normalize``)."""
        for ns in self.namespaces:
            if qname.startswith(ns + ".") and "." not in qname[len(ns) + 1:]:
                op = qname[len(ns) + 1:]
                if ns == "torch.linalg" and op in ("vector_norm", "norm", "matrix_norm", "vecdot", "multi_dot"):
                    return op
                return op
        return None


@functools.lru_cache(maxsize=1)
def load_api() -> TorchAPI:
    path = Path(__file__).with_name("torch_api.toml")
    return TorchAPI(tomllib.loads(path.read_text(encoding="utf-8")))
