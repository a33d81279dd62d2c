"""``--output-format lsp``: LSP ``Diagnostic`` objects per file, for editors that shell out.

A JSON array of ``{"uri", "filename", "diagnostics": [...]}`` (the shape of
``textDocument/publishDiagnostics`` params): 0-based UTF-16 positions, ``code``,
``codeDescription.href``, ``source: "dtypelint"``, ``relatedInformation`` for the
dataflow path and ``data.fix`` with the fix as LSP text edits.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import TextIO

from dtypelint.lsp.convert import Lines, to_lsp, uri_for
from dtypelint.reporters import Report, register


@register("lsp")
def render_lsp(report: Report, out: TextIO, color: bool) -> None:
    lines = Lines(report.texts)
    by_file: dict[str, list] = defaultdict(list)
    for d in report.diagnostics:
        by_file[d.filename].append(d)
    payload = []
    for filename, diags in by_file.items():
        uri = uri_for(filename)
        converted = []
        for d in diags:
            if d.cell is not None:
                from dtypelint.source.notebook import cell_lines_reader

                converted.append(to_lsp(d, Lines(reader=cell_lines_reader(d.cell)), uri=uri))
            else:
                converted.append(to_lsp(d, lines, uri=uri))
        payload.append({"uri": uri, "filename": filename, "diagnostics": converted})
    json.dump(payload, out, indent=2, ensure_ascii=False)
    out.write("\n")
