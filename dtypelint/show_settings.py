"""``dtypelint check --show-settings PATH``: the effective configuration for a file, and where each value came from.

Every setting is printed with its source: ``default``, the configuration file that set
it (``pyproject.toml: [tool.dtypelint]`` or a ``dtypelint.toml``), or ``command line``;
then the rules enabled for that file (``per-file-ignores`` applied).
``--output-format json`` prints the same as a JSON object.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any, TextIO

from dtypelint.config import FIELD_KEYS, Settings, provenance


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return value


def describe(path: Path, settings: Settings, cli: dict[str, Any], enabled: frozenset[str]) -> dict[str, Any]:
    sources = provenance(settings, cli)
    values = {}
    for name in FIELD_KEYS:
        value = getattr(settings, name)
        if name == "per_file_ignores":
            value = {pattern: list(codes) for pattern, codes in value}
        elif name == "sinks":
            value = {s.name: {"contract": s.contract, "args": list(s.args)} for s in value}
        values[FIELD_KEYS[name][0]] = {"value": _plain(value), "source": sources[name]}
    return {
        "path": str(path),
        "configuration_file": str(settings.config_file) if settings.config_file else None,
        "root": str(settings.root),
        "settings": values,
        "enabled_rules": sorted(enabled),
    }


def render(info: dict[str, Any], out: TextIO, as_json: bool = False) -> None:
    if as_json:
        out.write(json.dumps(info, indent=2) + "\n")
        return
    out.write(f"Settings for {info['path']}\n")
    out.write(f"  configuration file: {info['configuration_file'] or '(none: defaults)'}\n")
    out.write(f"  root (globs are relative to it): {info['root']}\n\n")
    rows = [(key, json.dumps(entry["value"]), entry["source"]) for key, entry in info["settings"].items()]
    rows.append(("enabled rules", ", ".join(info["enabled_rules"]) or "(none)", "computed"))
    key_w = max(len(k) for k, _, _ in rows)
    val_w = min(60, max(len(v) for _, v, _ in rows))
    for key, value, source in rows:
        out.write(f"{key:<{key_w}} = {value:<{val_w}}  # {source}\n")
