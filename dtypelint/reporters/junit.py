"""``--output-format junit``: JUnit XML, one test suite per file with findings, one failing case per finding.

A clean run is one passing test case, so CI dashboards show that the check ran.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TextIO
from xml.etree import ElementTree as ET

from dtypelint.reporters import Report, register


def build_junit(report: Report) -> ET.Element:
    by_file: dict[str, list] = defaultdict(list)
    for d in report.diagnostics:
        by_file[d.filename].append(d)
    total = len(report.diagnostics)
    root = ET.Element("testsuites", name="dtypelint", tests=str(max(total, 1)), failures=str(total), errors="0")
    if not by_file:
        suite = ET.SubElement(root, "testsuite", name="dtypelint", tests="1", failures="0", errors="0", skipped="0")
        ET.SubElement(suite, "testcase", name="dtypelint", classname="dtypelint")
    for filename, diags in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=filename, tests=str(len(diags)),
                              failures=str(len(diags)), errors="0", skipped="0")
        for d in diags:
            where = f"line {d.start.row}, col {d.start.column}"
            if d.cell is not None:
                where = f"cell {d.cell + 1}, {where}"
            case = ET.SubElement(suite, "testcase", name=f"org.dtypelint.{d.code}", classname=filename,
                                 file=filename, line=str(d.start.row))
            failure = ET.SubElement(case, "failure", message=d.message, type=f"{d.code} {d.name}")
            lines = [f"{where}, {d.message}"]
            if d.regimes:
                lines.append(f"breaks in: {', '.join(d.regimes)}")
            for i, step in enumerate(d.path, 1):
                lines.append(f"{i}. {step.filename}:{step.row}:{step.column} {step.message}")
            if d.fix:
                lines.append(f"fix ({d.fix.applicability}): {d.fix.message}")
            if d.url:
                lines.append(f"docs: {d.url}")
            failure.text = "\n".join(lines)
    return root


@register("junit")
def render_junit(report: Report, out: TextIO, color: bool) -> None:
    root = build_junit(report)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
