"""``--output-format sarif``: SARIF 2.1.0 for GitHub code scanning and other SARIF consumers.

One run.  ``tool.driver.rules`` lists every rule of the catalog (short and full
description, help text and URI, default level), results carry the dataflow path
as a ``codeFlow``, content fingerprints in ``partialFingerprints`` (stable when
lines move), and fixes as ``fixes``.  File URIs are relative to the
``%SRCROOT%`` base id (the working folder) when below it; columns count Unicode
code points (``run.columnKind``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from dtypelint import __version__
from dtypelint.catalog import load_catalog
from dtypelint.diagnostics import Diagnostic
from dtypelint.fingerprint import fingerprints
from dtypelint.reporters import Report, register

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://dtypelint.readthedocs.io/"
SRCROOT = "%SRCROOT%"
LEVELS = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}


def _root() -> Path:
    return Path.cwd().resolve()


def artifact_location(filename: str, root: Path) -> dict[str, Any]:
    """A URI relative to %SRCROOT% when the file is below it, else an absolute file URI."""
    path = Path(filename)
    absolute = Path(os.path.abspath(path if path.is_absolute() else (root / path)))  # symlinks kept as named
    try:
        rel = absolute.relative_to(root)
        return {"uri": quote(rel.as_posix()), "uriBaseId": SRCROOT}
    except (ValueError, OSError):
        if filename in ("-", "<stdin>"):
            return {"uri": "stdin"}
        return {"uri": absolute.as_uri()}


def region(d: Diagnostic) -> dict[str, int]:
    out = {"startLine": d.start.row, "startColumn": d.start.column}
    end_row, end_col = d.end.row, d.end.column
    if (end_row, end_col) < (d.start.row, d.start.column):
        end_row, end_col = d.start.row, d.start.column
    out["endLine"] = end_row
    out["endColumn"] = max(end_col, out["startColumn"] if end_row == d.start.row else 1)
    return out


def rule_descriptor(spec) -> dict[str, Any]:
    full = spec.docs.get("what_it_does", "").strip() or spec.summary
    why = spec.docs.get("why_is_this_bad", "").strip()
    return {
        "id": spec.code,
        "name": spec.name,
        "shortDescription": {"text": spec.summary},
        "fullDescription": {"text": " ".join((full + ("\n\n" + why if why else "")).split())},
        "help": {"text": f"{spec.summary} See {spec.url}", "markdown": spec.render_markdown()},
        "helpUri": spec.url,
        "defaultConfiguration": {"level": LEVELS.get(spec.severity, "warning"), "enabled": spec.default},
        "properties": {
            "tags": ["dtype", "mixed-precision", *spec.regimes],
            "regimes": list(spec.regimes),
            "fix": spec.fix,
        },
    }


def _message(d: Diagnostic) -> str:
    text = d.message
    if d.regimes:
        text += f" (breaks in: {', '.join(d.regimes)})"
    if d.cell is not None:
        text = f"[cell {d.cell + 1}] {text}"
    return text


def result(d: Diagnostic, rule_index: dict[str, int], root: Path, fingerprint: str) -> dict[str, Any]:
    location = {"physicalLocation": {"artifactLocation": artifact_location(d.filename, root), "region": region(d)}}
    res: dict[str, Any] = {
        "ruleId": d.code,
        "level": LEVELS.get(d.severity, "warning"),
        "message": {"text": _message(d)},
        "locations": [location],
        "partialFingerprints": {"dtypelint/v1": fingerprint},
    }
    if d.code in rule_index:
        res["ruleIndex"] = rule_index[d.code]
    if d.path:
        steps = []
        for step in d.path:
            steps.append({
                "location": {
                    "physicalLocation": {
                        "artifactLocation": artifact_location(step.filename, root),
                        "region": {"startLine": max(1, step.row), "startColumn": max(1, step.column)},
                    },
                    "message": {"text": step.message},
                },
            })
        res["codeFlows"] = [{
            "message": {"text": f"dtype flow to the {d.code} sink"},
            "threadFlows": [{"locations": steps}],
        }]
    if d.fix and d.fix.edits and d.cell is None:
        res["fixes"] = [{
            "description": {"text": f"{d.fix.message} ({d.fix.applicability} fix)"},
            "artifactChanges": [{
                "artifactLocation": artifact_location(d.filename, root),
                "replacements": [
                    {
                        "deletedRegion": {"startLine": e.start.row, "startColumn": e.start.column,
                                          "endLine": e.end.row, "endColumn": e.end.column},
                        "insertedContent": {"text": e.content},
                    }
                    for e in d.fix.edits
                ],
            }],
        }]
    props: dict[str, Any] = {}
    if d.regimes:
        props["regimes"] = list(d.regimes)
    if d.cell is not None:
        props["cell"] = d.cell
    if props:
        res["properties"] = props
    return res


def build_sarif(report: Report) -> dict[str, Any]:
    root = _root()
    catalog = load_catalog()
    rules = [rule_descriptor(spec) for spec in catalog.values()]
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    fps = fingerprints(report.diagnostics, report.texts)
    results = [result(d, rule_index, root, fp) for d, fp in zip(report.diagnostics, fps)]
    run = {
        "tool": {
            "driver": {
                "name": "dtypelint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": root.as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "invocations": [{
            "executionSuccessful": not any(d.code == "DTL005" for d in report.diagnostics),
            "workingDirectory": {"uri": root.as_uri().rstrip("/") + "/"},
        }],
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


@register("sarif")
def render_sarif(report: Report, out: TextIO, color: bool) -> None:
    json.dump(build_sarif(report), out, indent=2, ensure_ascii=False)
    out.write("\n")
