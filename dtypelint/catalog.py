"""The rule catalog: one TOML file per rule under the top-level ``rules/`` folder.

The catalog is the single source for ``dtypelint rules``, ``dtypelint rule CODE``,
the generated ``docs/rules/`` pages and the example-driven tests.  Detection logic
lives in the package; the catalog holds what a user reads.  In an installed wheel
the folder is shipped as ``dtypelint/_catalog``; in a source checkout it is read
from ``rules/`` next to the package.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from dtypelint.diagnostics import REGIMES, SEVERITIES, rule_url

DOC_SECTIONS = (
    ("what_it_does", "What it does"),
    ("why_is_this_bad", "Why is this bad?"),
    ("known_problems", "Known problems"),
    ("example", "Example"),
    ("use_instead", "Use instead"),
    ("fix_safety", "Fix safety"),
    ("options", "Options"),
    ("references", "References"),
)
FIX_AVAILABILITY = ("always", "sometimes", "none")
CODE_SECTIONS = {"example", "use_instead"}


class CatalogError(Exception):
    """A catalog file is malformed (a bug in dtypelint, not in the user's input)."""


@dataclass(frozen=True)
class Example:
    """An example snippet: ``code`` must (invalid) or must not (valid) be flagged."""

    code: str
    fixed: str | None = None  # expected source after applying the fixes (invalid only)
    lines: tuple[int, ...] = ()  # expected 1-based rows of the findings (invalid only)
    regimes: tuple[str, ...] = ()  # expected regimes (invalid only; empty = not checked)
    unsafe: bool = False  # the expected fix needs --unsafe-fixes
    config: dict = field(default_factory=dict)  # settings overrides, e.g. {"compute-dtype": "bfloat16"}


@dataclass(frozen=True)
class RuleSpec:
    code: str
    name: str
    summary: str
    severity: str
    regimes: tuple[str, ...]
    fix: str  # always | sometimes | none
    fix_title: str
    default: bool  # selected by default
    docs: dict[str, str]
    invalid: tuple[Example, ...]
    valid: tuple[Example, ...]
    # how the hazard shows at run time: "dtype" (an error or a wrong dtype, which `verify` reproduces) or
    # "values" (inf/NaN or lost precision for particular inputs, which random inputs do not reveal)
    runtime: str = "dtype"

    @property
    def url(self) -> str:
        return rule_url(self.code, self.name)

    def render_markdown(self) -> str:
        """The rule's documentation in ruff's fixed sections."""
        fix_line = {
            "always": "Fix is always available.",
            "sometimes": "Fix is sometimes available.",
            "none": "Fix is not available.",
        }[self.fix]
        regimes = ", ".join(f"`{r}`" for r in self.regimes) or "any"
        out = [
            f"# {self.name} ({self.code})",
            "",
            f"{self.summary}",
            "",
            f"Severity: **{self.severity}** · Regimes: {regimes} · {fix_line}",
            "",
        ]
        for key, title in DOC_SECTIONS:
            text = self.docs.get(key, "").strip()
            if not text:
                continue
            out.append(f"## {title}")
            out.append("")
            if key in CODE_SECTIONS:
                out += ["```python", text, "```"]
            else:
                out.append(text)
            out.append("")
        return "\n".join(out).rstrip() + "\n"


def catalog_dir() -> Path:
    """Where the catalog lives: inside the installed package, or ``rules/`` in a checkout."""
    here = Path(__file__).resolve().parent
    shipped = here / "_catalog"
    if shipped.is_dir():
        return shipped
    return here.parent / "rules"


def _examples(raw: list, path: Path, kind: str) -> tuple[Example, ...]:
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or "code" not in item:
            raise CatalogError(f"{path}: {kind}[{i}] needs a 'code' string")
        regimes = tuple(item.get("regimes", ()))
        bad = set(regimes) - set(REGIMES)
        if bad:
            raise CatalogError(f"{path}: {kind}[{i}] has unknown regimes {sorted(bad)}")
        out.append(
            Example(
                code=item["code"],
                fixed=item.get("fixed"),
                lines=tuple(item.get("lines", ())),
                regimes=regimes,
                unsafe=bool(item.get("unsafe", False)),
                config=dict(item.get("config", {})),
            )
        )
    return tuple(out)


def load_rule(path: Path) -> RuleSpec:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: {exc}") from exc
    try:
        spec = RuleSpec(
            code=data["code"],
            name=data["name"],
            summary=data["summary"],
            severity=data.get("severity", "error"),
            regimes=tuple(data.get("regimes", ())),
            fix=data.get("fix", "none"),
            fix_title=data.get("fix_title", ""),
            default=bool(data.get("default", True)),
            docs={k: str(v) for k, v in data.get("docs", {}).items()},
            invalid=_examples(data.get("invalid", []), path, "invalid"),
            valid=_examples(data.get("valid", []), path, "valid"),
            runtime=data.get("runtime", "dtype"),
        )
    except KeyError as exc:
        raise CatalogError(f"{path}: missing key {exc}") from exc
    if spec.severity not in SEVERITIES:
        raise CatalogError(f"{path}: severity must be one of {SEVERITIES}")
    if spec.fix not in FIX_AVAILABILITY:
        raise CatalogError(f"{path}: fix must be one of {FIX_AVAILABILITY}")
    if set(spec.regimes) - set(REGIMES):
        raise CatalogError(f"{path}: unknown regimes in {spec.regimes}")
    if spec.runtime not in ("dtype", "values"):
        raise CatalogError(f"{path}: runtime must be \"dtype\" or \"values\", not {spec.runtime!r}")
    if path.stem != spec.code:
        raise CatalogError(f"{path}: file name must be the rule code {spec.code}")
    return spec


@functools.lru_cache(maxsize=None)
def load_catalog() -> dict[str, RuleSpec]:
    """All rules by code, sorted by code."""
    rules: dict[str, RuleSpec] = {}
    for path in sorted(catalog_dir().glob("DTL*.toml")):
        spec = load_rule(path)
        rules[spec.code] = spec
    return rules


def get_rule(code: str) -> RuleSpec | None:
    return load_catalog().get(code.upper())
