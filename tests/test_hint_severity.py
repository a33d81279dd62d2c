"""The ``hint`` severity (API hygiene rules such as DTL201) in the catalog, every output format and the LSP."""

from __future__ import annotations

import json
from xml.etree import ElementTree as ET

import pytest

from conftest import run_cli
from dtypelint.catalog import load_catalog
from dtypelint.diagnostics import SEVERITIES

TRAINER = '''\
import torch


def train_step(model, x, opt, scaler):
    with torch.cuda.amp.autocast():
        loss = model(x).sum()
    scaler.scale(loss).backward()
'''


@pytest.fixture
def trainer(project):
    (project / "train.py").write_text(TRAINER)
    return project


def test_hint_is_a_severity_and_the_hygiene_rules_use_it():
    assert "hint" in SEVERITIES
    catalog = load_catalog()
    assert catalog["DTL201"].severity == "hint" and catalog["DTL205"].severity == "hint"


def test_json_and_text_formats(trainer):
    (d,) = json.loads(run_cli("--output-format", "json", "train.py").output)
    assert (d["code"], d["severity"], d["location"]["row"], d["regimes"]) == ("DTL201", "hint", 5, [])
    assert d["fix"]["applicability"] == "safe"
    for fmt in ("full", "concise"):
        out = run_cli("--output-format", fmt, "train.py").output
        assert "train.py:5:10: DTL201 [*]" in out and "breaks" not in out


def test_sarif_note(trainer):
    log = json.loads(run_cli("--output-format", "sarif", "train.py").output)
    (r,) = log["runs"][0]["results"]
    assert r["ruleId"] == "DTL201" and r["level"] == "note"
    rules = {x["id"]: x for x in log["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["DTL201"]["defaultConfiguration"]["level"] == "note"


def test_github_notice(trainer):
    out = run_cli("--output-format", "github", "train.py").output
    assert out.startswith("::notice ") and "DTL201" in out


def test_gitlab_info(trainer):
    (issue,) = json.loads(run_cli("--output-format", "gitlab", "train.py").output)
    assert issue["severity"] == "info" and issue["check_name"].startswith("DTL201")


def test_junit_and_html(trainer):
    root = ET.fromstring(run_cli("--output-format", "junit", "train.py").output.split("\n", 1)[1])
    (failure,) = root.iter("failure")
    assert failure.get("type").startswith("DTL201")
    html = run_cli("--output-format", "html", "train.py").output
    assert 'class="finding sev-hint"' in html


def test_lsp_hint_severity(trainer):
    from lsprotocol.types import DiagnosticSeverity

    (entry,) = json.loads(run_cli("--output-format", "lsp", "train.py").output)
    (d,) = entry["diagnostics"]
    assert d["severity"] == DiagnosticSeverity.Hint == 4


def test_select_ignore_and_statistics(trainer):
    assert "DTL201" in run_cli("--select", "DTL2", "--output-format", "concise", "train.py").output
    assert "DTL201" not in run_cli("--ignore", "DTL20", "--output-format", "concise", "train.py").output
    rows = json.loads(run_cli("--statistics", "--output-format", "json", "train.py").output)
    assert rows == [{"code": "DTL201", "name": "deprecated-amp-api", "count": 1, "fixable": 1, "unsafe_fixes": 0}]
