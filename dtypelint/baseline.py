"""Baselines: adopt dtypelint on a legacy repository and fail only on new findings.

``check --write-baseline FILE`` records every current finding; ``check --baseline
FILE`` then reports only findings that are not in it.  A finding is keyed on its
content, not its line (see :mod:`dtypelint.fingerprint`): rule code, file,
enclosing scope, normalised statement text and occurrence number.  Moving code
up or down, or editing other functions, keeps old findings matched; editing the
flagged statement itself makes it a new finding, which is what a reviewer wants.

File paths in the baseline are relative to the baseline file's folder, so the
same baseline works from any working folder.  The file is JSON, sorted, one
finding per entry with its readable anchor, so it diffs well in review; it is
written atomically (temporary file + rename).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from dtypelint import __version__
from dtypelint.diagnostics import Diagnostic
from dtypelint.fingerprint import FINGERPRINT_VERSION, Anchor, anchors, default_text_of

FORMAT = "dtypelint-baseline"
FORMAT_VERSION = 1


class BaselineError(Exception):
    """The baseline file is missing or unreadable; the CLI exits 2 with this message."""


def _relative(filename: str, base: Path) -> str:
    path = Path(filename)
    try:
        absolute = (path if path.is_absolute() else Path.cwd() / path).resolve()
        return Path(os.path.relpath(absolute, base.resolve())).as_posix()
    except (OSError, ValueError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return path.as_posix()


def _anchors(diagnostics: list[Diagnostic], baseline_file: Path, texts: dict[str, str] | None) -> list[Anchor]:
    base = baseline_file.parent if str(baseline_file.parent) else Path(".")
    raw = anchors(diagnostics, default_text_of(texts))
    return [replace(a, filename=_relative(a.filename, base)) for a in raw]


def write_baseline(path: Path, diagnostics: list[Diagnostic], texts: dict[str, str] | None = None) -> int:
    """Record every finding in ``path`` (atomically); returns how many were recorded."""
    entries = []
    for d, a in zip(diagnostics, _anchors(diagnostics, path, texts)):
        entries.append({
            "fingerprint": a.digest(),
            "code": a.code,
            "file": a.filename,
            "scope": a.scope,
            "statement": a.statement,
            "occurrence": a.occurrence,
            "message": d.message,
        })
    entries.sort(key=lambda e: (e["file"], e["code"], e["scope"], e["statement"], e["occurrence"]))
    payload = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "fingerprint_version": FINGERPRINT_VERSION,
        "generated_by": f"dtypelint {__version__}",
        "findings": entries,
    }
    text = json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
    from dtypelint.fixer.write import WriteError, write_atomic

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"), create=True)
    except (OSError, WriteError) as exc:
        raise BaselineError(f"{path}: cannot write baseline: {getattr(exc, 'strerror', None) or exc}") from exc
    return len(entries)


def load_baseline(path: Path) -> set[str]:
    """The fingerprints recorded in a baseline file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file not found (create it with `dtypelint check --write-baseline {path}`)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read baseline: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}: corrupt baseline (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("findings"), list):
        raise BaselineError(f"{path}: not a dtypelint baseline (expected {{\"format\": \"{FORMAT}\", \"findings\": [...]}})")
    if data.get("version") != FORMAT_VERSION:
        raise BaselineError(f"{path}: unsupported baseline version {data.get('version')!r}; regenerate it with --write-baseline")
    if str(data.get("fingerprint_version")) != FINGERPRINT_VERSION:
        raise BaselineError(f"{path}: baseline from an incompatible dtypelint; regenerate it with --write-baseline")
    out = set()
    for i, entry in enumerate(data["findings"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("fingerprint"), str):
            raise BaselineError(f"{path}: corrupt baseline (finding {i} has no fingerprint)")
        out.add(entry["fingerprint"])
    return out


def filter_new(diagnostics: list[Diagnostic], baseline_file: Path, known: set[str],
               texts: dict[str, str] | None = None) -> tuple[list[Diagnostic], int]:
    """Findings not in the baseline, and how many were hidden because they are."""
    new = []
    hidden = 0
    for d, a in zip(diagnostics, _anchors(diagnostics, baseline_file, texts)):
        if a.digest() in known:
            hidden += 1
        else:
            new.append(d)
    return new, hidden
