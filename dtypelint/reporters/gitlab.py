"""``--output-format gitlab``: GitLab code quality report (a JSON array of issues).

Each issue has ``description``, ``check_name``, ``fingerprint`` (unique, stable
when lines move), ``severity`` (``info|minor|major|critical|blocker``) and
``location.path`` / ``location.lines.begin``.  Paths are relative to
``$CI_PROJECT_DIR`` when it is set (GitLab resolves them against the repository
root), otherwise to the working folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, TextIO

from dtypelint.fingerprint import fingerprints
from dtypelint.reporters import Report, register

SEVERITIES = {"error": "major", "warning": "minor", "info": "info", "hint": "info"}


def project_path(filename: str) -> str:
    base = os.environ.get("CI_PROJECT_DIR")
    if not base:
        return filename
    absolute = Path(os.path.abspath(filename))  # symlinks kept as named
    for root in (Path(os.path.abspath(base)), Path(os.path.realpath(base))):
        try:
            return absolute.relative_to(root).as_posix()
        except ValueError:
            continue
    return filename


def build_gitlab(report: Report) -> list[dict[str, Any]]:
    out = []
    used: set[str] = set()
    for d, fp in zip(report.diagnostics, fingerprints(report.diagnostics, report.texts)):
        fingerprint = hashlib.md5(f"dtypelint:{fp}".encode()).hexdigest()
        while fingerprint in used:  # the format requires unique fingerprints
            fingerprint = hashlib.md5(fingerprint.encode()).hexdigest()
        used.add(fingerprint)
        description = f"{d.code} {d.message}"
        if d.cell is not None:
            description = f"{d.code} [cell {d.cell + 1}, line {d.start.row}] {d.message}"
        if d.regimes:
            description += f" (breaks in: {', '.join(d.regimes)})"
        issue: dict[str, Any] = {
            "type": "issue",
            "check_name": f"{d.code} {d.name}",
            "description": description,
            "categories": ["Bug Risk"],
            "severity": SEVERITIES.get(d.severity, "minor"),
            "fingerprint": fingerprint,
            "location": {
                "path": project_path(d.filename),
                "lines": {"begin": d.start.row, "end": max(d.end.row, d.start.row)},
            },
            "engine_name": "dtypelint",
        }
        if d.url:
            issue["content"] = {"body": f"See {d.url}"}
        out.append(issue)
    return out


@register("gitlab")
def render_gitlab(report: Report, out: TextIO, color: bool) -> None:
    json.dump(build_gitlab(report), out, indent=2, ensure_ascii=False)
    out.write("\n")
