"""``--output-format html``: one self-contained page to look at a run's findings.

A dtype bug is a path through code, so each finding shows the source of the function
(or functions) it crosses with the dataflow drawn on it: the fp32 source, each
promotion and the sink, numbered, each number linked between the code and the step
list.  The page also shows the regimes in which the code breaks, the fix as a diff,
the rule's documentation, filters by rule and file, and a summary chart per rule and
per folder.  Everything (CSS, JS, the SVG charts) is inline and a Content-Security-Policy
forbids any load, so the file can be mailed, attached to a CI run and opened offline.
Without JavaScript the page still shows everything but the arrows and the filters.
"""

from __future__ import annotations

import ast
import difflib
import html
import re
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import PurePath
from typing import TextIO

from dtypelint import __version__
from dtypelint.diagnostics import Diagnostic, PathStep
from dtypelint.reporters import Report, is_fixable, register
from dtypelint.reporters.full import REGIME_TEXT

MAX_FULL_FUNCTION = 60  # longer functions are shown around the steps only
CONTEXT = 3
_CELL_PREFIX = re.compile(r"^\[cell (\d+)\] ")
_TOKEN = re.compile(r"[\w.]+(?:\(\))?|\S")
_CODE_SPAN = re.compile(r"`([^`]+)`")
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def inline_code(text: str) -> str:
    """Escaped text with `backticks` as <code>."""
    return _CODE_SPAN.sub(lambda m: f"<code>{m.group(1)}</code>", esc(text))


# -- sources and the regions a finding crosses -----------------------------------------


class Sources:
    """Texts of the files (and notebook cells) findings point into, with their function spans."""

    def __init__(self, report: Report):
        self.report = report
        self._lines: dict[tuple[str, int | None], list[str]] = {}
        self._spans: dict[tuple[str, int | None], list[tuple[int, int, str]]] = {}

    def lines(self, filename: str, cell: int | None) -> list[str]:
        key = (filename, cell)
        if key not in self._lines:
            if cell is None:
                self._lines[key] = self.report.source_lines(filename)
            else:
                from dtypelint.source.notebook import cell_source

                text = self.report.texts.get(filename)
                if text is None:
                    try:
                        with open(filename, encoding="utf-8-sig") as fh:
                            text = fh.read()
                    except OSError:
                        text = ""
                self._lines[key] = (cell_source(text, cell) or "").splitlines()
        return self._lines[key]

    def spans(self, filename: str, cell: int | None) -> list[tuple[int, int, str]]:
        """(first row, last row, title) of every function and class, innermost last."""
        key = (filename, cell)
        if key not in self._spans:
            lines = self.lines(filename, cell)
            if cell is not None:
                from dtypelint.source.notebook import pythonise_lines

                lines = pythonise_lines(lines)
            spans: list[tuple[int, int, str]] = []
            try:
                tree = ast.parse("\n".join(lines) + "\n")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    kind = "class" if isinstance(node, ast.ClassDef) else "def"
                    spans.append((first, node.end_lineno or node.lineno, f"{kind} {node.name}"))
            spans.sort(key=lambda s: (s[0], -s[1]))
            self._spans[key] = spans
        return self._spans[key]

    def enclosing(self, filename: str, cell: int | None, row: int) -> tuple[int, int, str] | None:
        """The innermost function around ``row`` (a class if no function holds it)."""
        found = [s for s in self.spans(filename, cell) if s[0] <= row <= s[1]]
        functions = [s for s in found if s[2].startswith("def ")]
        pick = functions or found
        return min(pick, key=lambda s: s[1] - s[0]) if pick else None


@dataclass
class Step:
    number: int
    kind: str  # source | promotion | sink
    filename: str
    cell: int | None
    row: int
    column: int
    message: str


@dataclass
class Region:
    filename: str
    cell: int | None
    first: int
    last: int
    title: str
    steps: list[Step]


def steps_of(d: Diagnostic) -> list[Step]:
    """The dataflow path as numbered steps; a finding without a path has its location as the sink."""
    raw = list(d.path) or [PathStep(d.filename, d.start.row, d.start.column, d.message)]
    out = []
    for i, s in enumerate(raw, 1):
        cell = d.cell if s.filename == d.filename else None
        message = s.message
        m = _CELL_PREFIX.match(message)
        if m and d.cell is not None:
            cell, message = int(m.group(1)) - 1, message[m.end():]
        kind = "sink" if i == len(raw) else ("source" if i == 1 else "promotion")
        out.append(Step(i, kind, s.filename, cell, s.row, s.column, message))
    return out


def regions_of(d: Diagnostic, steps: list[Step], sources: Sources) -> list[Region]:
    regions: list[Region] = []
    for step in steps:
        span = sources.enclosing(step.filename, step.cell, step.row)
        if span is None:
            n = len(sources.lines(step.filename, step.cell))
            span = (max(1, step.row - CONTEXT), min(max(n, step.row), step.row + CONTEXT), "")
        for r in regions:
            if (r.filename, r.cell) == (step.filename, step.cell) and (r.first, r.last) == span[:2]:
                r.steps.append(step)
                break
        else:
            regions.append(Region(step.filename, step.cell, span[0], span[1], span[2], [step]))
    return regions


def shown_rows(region: Region) -> list[int | None]:
    """Rows to print (None marks an elision): the whole function, or the steps' neighbourhood if it is long."""
    rows = list(range(region.first, region.last + 1))
    if len(rows) <= MAX_FULL_FUNCTION:
        return rows
    keep = {region.first, region.first + 1}
    for s in region.steps:
        keep.update(range(s.row - CONTEXT, s.row + CONTEXT + 1))
    out: list[int | None] = []
    for row in rows:
        if row in keep:
            out.append(row)
        elif out and out[-1] is not None:
            out.append(None)
    return out


# -- rendering --------------------------------------------------------------------------


def _location(d: Diagnostic) -> str:
    where = f"cell {d.cell + 1}:" if d.cell is not None else ""
    return f"{d.filename}:{where}{d.start.row}:{d.start.column}"


def _marked_line(text: str, marks: list[tuple[int, list[Step]]]) -> str:
    """One source line with the token at each step's column highlighted."""
    out, pos = [], 0
    for column, steps in sorted(marks, key=lambda m: m[0]):
        start = max(pos, min(max(0, column - 1), len(text)))
        m = _TOKEN.match(text, start)
        end = m.end() if m else start
        kinds = " ".join(sorted({s.kind for s in steps}))
        title = " / ".join(f"{s.number}. {s.message}" for s in steps)
        out.append(esc(text[pos:start]))
        out.append(f'<mark class="hit {kinds}" title="{esc(title)}">{esc(text[start:end])}</mark>')
        pos = end
    out.append(esc(text[pos:]))
    return "".join(out)


def _pins(steps: list[Step], fid: str) -> str:
    """The numbered badges of the steps on one line, in the gutter; each links to its entry in the step list."""
    return "".join(f'<a class="pin {s.kind}" id="{fid}-s{s.number}" href="#{fid}-step{s.number}" '
                   f'data-order="{s.number}" title="{esc(s.message)}">{s.number}</a>' for s in steps)


def render_region(region: Region, lines: list[str], fid: str, rid: int) -> str:
    by_row: dict[int, dict[int, list[Step]]] = {}
    for s in region.steps:
        by_row.setdefault(s.row, {}).setdefault(s.column, []).append(s)
    where = region.filename + (f" · cell {region.cell + 1}" if region.cell is not None else "")
    title = f" · <code>{esc(region.title)}</code>" if region.title else ""
    rows = [f'<div class="region" id="{fid}-r{rid}"><div class="region-head">{esc(where)}{title}'
            f' <span class="muted">lines {region.first}–{region.last}</span></div>',
            '<div class="codeblock"><svg class="arrows" aria-hidden="true"></svg><pre>']
    for row in shown_rows(region):
        if row is None:
            rows.append('<span class="line gap"><span class="no">⋮</span><span class="pins"></span></span>')
            continue
        text = lines[row - 1] if 0 < row <= len(lines) else ""
        marks = sorted(by_row.get(row, {}).items())
        steps = sorted((s for _, group in marks for s in group), key=lambda s: s.number)
        cls = "line step-line" if marks else "line"
        body = _marked_line(text, marks) if marks else esc(text)
        rows.append(f'<span class="{cls}"><span class="no">{row}</span><span class="pins">{_pins(steps, fid)}</span>'
                    f'{body or " "}</span>')
    rows.append("</pre></div></div>")
    return "".join(rows)


def render_diff(d: Diagnostic, sources: Sources) -> str:
    """The fix applied to the finding's file (or cell), as a unified diff."""
    from dtypelint.edits import apply_edit_groups
    from dtypelint.source import SourceFile

    if d.fix is None or not d.fix.edits:
        return ""
    lines = sources.lines(d.filename, d.cell)
    if not lines:
        return ""
    before = "\n".join(lines) + "\n"
    after, applied = apply_edit_groups(SourceFile(text=before), [d.fix.edits])
    if not applied:
        return ""
    name = d.filename + (f" (cell {d.cell + 1})" if d.cell is not None else "")
    out = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{name}", f"b/{name}", n=2,
                                     lineterm=""):
        cls = ("meta" if line.startswith(("---", "+++")) else "hunk" if line.startswith("@@")
               else "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx")
        out.append(f'<span class="{cls}">{esc(line) or " "}</span>')
    return "".join(out)


def render_doc(code: str) -> str:
    from dtypelint.catalog import DOC_SECTIONS, load_catalog

    spec = load_catalog().get(code)
    if spec is None:
        return ""
    parts = [f'<details class="doc" id="rule-{esc(code)}"><summary>{esc(code)} <code>{esc(spec.name)}</code>: '
             f"{inline_code(spec.summary)}</summary>"]
    for key, title in DOC_SECTIONS:
        text = spec.docs.get(key, "").strip()
        if not text:
            continue
        if key in ("example", "use_instead"):
            body = f"<pre>{esc(text)}</pre>"
        else:
            body = "".join(f"<p>{inline_code(p)}</p>" for p in re.split(r"\n\s*\n", text) if p.strip())
        parts.append(f"<h4>{esc(title)}</h4>{body}")
    parts.append(f'<p class="muted">Online: <span class="url">{esc(spec.url)}</span></p></details>')
    return "".join(parts)


def render_finding(n: int, d: Diagnostic, sources: Sources, unsafe: bool) -> str:
    fid = f"f{n}"
    steps = steps_of(d)
    folder = folder_of(d.filename)
    fixable = is_fixable(d, unsafe)
    parts = [f'<article class="finding sev-{esc(d.severity)}" id="{fid}" data-code="{esc(d.code)}" '
             f'data-file="{esc(d.filename)}" data-folder="{esc(folder)}">',
             f'<header><a class="rule-code" href="#{fid}">{esc(d.code)}</a> <span class="name">{esc(d.name)}</span>'
             f' <span class="loc">{esc(_location(d))}</span>'
             + (' <span class="badge fixable">fixable</span>' if fixable else "") + "</header>",
             f'<p class="msg">{inline_code(d.message)}</p>']
    if d.regimes:
        badges = "".join(f'<span class="regime" title="{esc(REGIME_TEXT.get(r, r))}">{esc(r)}</span>'
                         for r in d.regimes)
        explained = "; ".join(REGIME_TEXT.get(r, r) for r in d.regimes)
        parts.append(f'<p class="regimes">Breaks in {badges} <span class="muted">{esc(explained)}</span></p>')
    parts.append('<div class="flow"><ol class="steps">')
    for s in steps:
        where = (f"{s.filename} " if s.filename != d.filename else "") + \
            (f"cell {s.cell + 1}, " if s.cell is not None else "") + f"line {s.row}, col {s.column}"
        parts.append(f'<li class="step {s.kind}" id="{fid}-step{s.number}"><a class="num" href="#{fid}-s{s.number}"'
                     f' data-target="{fid}-s{s.number}">{s.number}</a><span class="kind">{s.kind}</span>'
                     f'<span class="where">{esc(where)}</span><span class="what">{inline_code(s.message)}</span></li>')
    parts.append('</ol><div class="regions">')
    for rid, region in enumerate(regions_of(d, steps, sources), 1):
        parts.append(render_region(region, sources.lines(region.filename, region.cell), fid, rid))
    parts.append("</div></div>")
    if d.fix is not None:
        diff = render_diff(d, sources)
        head = (f'Fix <span class="badge {esc(d.fix.applicability)}">{esc(d.fix.applicability)}</span> '
                f'{inline_code(d.fix.message)}')
        body = f'<pre class="diff">{diff}</pre>' if diff else ""
        parts.append(f'<details class="fix" open><summary>{head}</summary>{body}</details>')
    parts.append(f'<p class="doc-link"><a href="#rule-{esc(d.code)}">About {esc(d.code)}</a></p></article>')
    return "".join(parts)


def folder_of(filename: str) -> str:
    parent = PurePath(filename).parent.as_posix()
    return parent if parent not in ("", ".") else "."


def bar_chart(title: str, counts: list[tuple[str, str, int]], kind: str) -> str:
    """A horizontal SVG bar chart; each bar (label, filter value, count) filters the list when clicked."""
    if not counts:
        return ""
    row_h, label_w, bar_w = 26, 300, 360
    top = max(c for _, _, c in counts)
    height = row_h * len(counts) + 8
    bars = []
    for i, (label, value, count) in enumerate(counts):
        y = 4 + i * row_h
        w = max(2, round(bar_w * count / top))
        shown = label if len(label) <= 42 else "…" + label[-41:]
        bars.append(f'<g class="bar" data-kind="{kind}" data-value="{esc(value)}" tabindex="0" role="button">'
                    f'<title>{esc(label)}: {count}</title>'
                    f'<text x="{label_w - 8}" y="{y + 17}" text-anchor="end">{esc(shown)}</text>'
                    f'<rect x="{label_w}" y="{y + 3}" width="{w}" height="{row_h - 8}" rx="3"></rect>'
                    f'<text class="count" x="{label_w + w + 6}" y="{y + 17}">{count}</text></g>')
    return (f'<figure class="chart"><figcaption>{esc(title)}</figcaption>'
            f'<svg viewBox="0 0 {label_w + bar_w + 50} {height}" role="img" aria-label="{esc(title)}">'
            + "".join(bars) + "</svg></figure>")


def _asset(name: str) -> str:
    return resources.files("dtypelint.reporters").joinpath("html_assets", name).read_text(encoding="utf-8")


def render_page(report: Report) -> str:
    diags = report.diagnostics
    sources = Sources(report)
    names = {d.code: d.name for d in diags}
    per_rule = Counter(d.code for d in diags)
    per_folder = Counter(folder_of(d.filename) for d in diags)
    files = sorted({d.filename for d in diags})
    fixable, hidden = report.fixable()
    n = len(diags)
    summary = (f"{n} finding{'s' if n != 1 else ''} in {len(files)} of {report.files_checked} "
               f"file{'s' if report.files_checked != 1 else ''} checked")
    extra = []
    if fixable:
        extra.append(f"{fixable} fixable with <code>--fix</code>")
    if hidden:
        extra.append(f"{hidden} more with <code>--unsafe-fixes</code>")
    if report.baselined:
        extra.append(f"{report.baselined} hidden by the baseline")
    rule_opts = "".join(f'<option value="{esc(c)}">{esc(c)} {esc(names[c])} ({per_rule[c]})</option>'
                        for c in sorted(per_rule))
    file_opts = "".join(f'<option value="{esc(f)}">{esc(f)}</option>' for f in files)
    charts = (bar_chart("Findings per rule", [(f"{c} {names[c]}", c, per_rule[c]) for c in sorted(per_rule)], "rule")
              + bar_chart("Findings per folder", sorted(((f, f, c) for f, c in per_folder.items()),
                                                        key=lambda t: (-t[2], t[0])), "folder"))
    body = "".join(render_finding(i, d, sources, report.unsafe_fixes) for i, d in enumerate(diags, 1))
    docs = "".join(render_doc(code) for code in sorted(per_rule))  # each rule's documentation once
    if docs:
        body += f'<section class="rules" id="rules"><h2>The rules</h2>{docs}</section>'
    if not diags:
        body = '<p class="clean">All checks passed: no dtype hazards found.</p>'
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="dtypelint {esc(__version__)}">
<title>dtypelint report: {n} finding{'s' if n != 1 else ''}</title>
<style>
{_asset("report.css")}
</style>
</head>
<body>
<header class="top">
<h1>dtypelint</h1>
<p class="summary-line">{esc(summary)}{'' if not extra else ' · ' + ' · '.join(extra)}</p>
</header>
<section class="charts">{charts}</section>
<nav class="filters" aria-label="Filters">
<label>Rule <select id="filter-rule"><option value="">all rules</option>{rule_opts}</select></label>
<label>File <select id="filter-file"><option value="">all files</option>{file_opts}</select></label>
<input type="hidden" id="filter-folder" value="">
<span id="folder-chip" class="chip" hidden></span>
<button type="button" id="filter-reset">Show all</button>
<span id="shown" class="muted">{n} shown</span>
</nav>
<main id="findings">
{body}
</main>
<footer class="muted">Generated by dtypelint {esc(__version__)}. Numbers on the code follow the dataflow: 1 is where
the value becomes float32, the last is the sink that breaks.</footer>
<script>
{_asset("report.js")}
</script>
</body>
</html>
"""


@register("html")
def render_html(report: Report, out: TextIO, color: bool) -> None:
    out.write(render_page(report))
