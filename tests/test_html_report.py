"""`--output-format html`: one self-contained page with the dataflow drawn on the code.

Checked here: the page parses, loads nothing from anywhere, carries every finding's dataflow path
(each step numbered on the code and in the step list, linked both ways), the regimes, the fix as a diff,
the filters and the charts.  Where Debian's Chromium is installed, the page is rendered headless and the
arrows the script draws are counted in the rendered DOM.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from test_notebooks import make_notebook

FIXTURES = ["seed1_bmm_attention_helper.py", "seed5_t5_keep_fp32.py", "seed2_cosine_flash.py"]


class Page(HTMLParser):
    """Collects elements with their attributes, and checks that every opened element is closed in order."""

    VOID = {"meta", "link", "input", "br", "img", "hr", "source", "wbr", "area", "base", "col", "embed", "track"}
    SVG_LEAVES = {"rect", "path", "circle", "line", "polyline", "polygon", "stop", "use"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.elements: list[tuple[str, dict]] = []
        self.errors: list[str] = []
        self.text_by_id: dict[str, str] = {}
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()

    def find(self, tag=None, **attrs) -> list[dict]:
        return [a for t, a in self.elements if (tag is None or t == tag)
                and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def with_class(self, name: str, tag: str | None = None) -> list[dict]:
        return [a for t, a in self.elements if (tag is None or t == tag) and name in (a.get("class") or "").split()]


@pytest.fixture
def report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in FIXTURES:
        shutil.copy(ROOT / "fixtures" / name, tmp_path / name)
    (tmp_path / "models").mkdir()
    shutil.copy(ROOT / "fixtures" / "dtl105_moe_dispatch.py", tmp_path / "models" / "moe.py")
    out = tmp_path / "report.html"
    res = run_cli("--output-format", "html", "-o", str(out), ".")
    assert res.exit_code == 1, res.output
    findings = json.loads(run_cli("--output-format", "json", ".").output)
    return out, out.read_text(encoding="utf-8"), findings


def test_page_is_well_formed_and_self_contained(report):
    _, text, findings = report
    page = Page(text)
    assert not page.errors, page.errors[:5]
    assert text.startswith("<!DOCTYPE html>")
    for tag, attrs in page.elements:
        for key in ("src", "href", "action", "data", "poster", "xlink:href"):
            value = (attrs.get(key) or "").strip().lower()
            assert not re.match(r"(https?:)?//", value), (tag, key, value)  # nothing loads from a network
        assert tag not in ("iframe", "object", "embed", "link", "img", "base"), tag
        if tag == "script":
            assert "src" not in attrs
    assert "url(http" not in text and "@import" not in text
    csp = page.find("meta", http_equiv="Content-Security-Policy")
    assert csp and "default-src 'none'" in csp[0]["content"]  # and the browser refuses any load anyway
    assert len(page.with_class("finding", "article")) == len(findings) > 5


def test_every_finding_carries_its_path_numbered_and_linked(report):
    _, text, findings = report
    page = Page(text)
    articles = page.with_class("finding", "article")
    for n, (d, article) in enumerate(zip(findings, articles), 1):
        fid = article["id"]
        assert fid == f"f{n}" and article["data-code"] == d["code"] and article["data-file"] == d["filename"]
        steps = [a for a in page.with_class("step", "li") if a["id"].startswith(f"{fid}-step")]
        assert [s["id"] for s in steps] == [f"{fid}-step{i}" for i in range(1, len(d["path"]) + 1)]
        kinds = [s["class"].split()[1] for s in steps]
        assert kinds[0] == "source" and kinds[-1] == "sink" and set(kinds[1:-1]) <= {"promotion"}
        for i, step in enumerate(d["path"], 1):
            # the step list links to the mark on the code, the mark links back to the list
            assert page.find("a", href=f"#{fid}-s{i}")  # the step list links to the numbered pin on the code
            (pin,) = page.find("a", id=f"{fid}-s{i}")
            assert pin["href"] == f"#{fid}-step{i}" and pin["class"].split()[0] == "pin"  # and back
            assert step["message"].split("`")[0] in text or "[cell" in step["message"]
        for r in d["regimes"]:
            assert f'">{r}</span>' in text


def test_marks_sit_on_the_steps_lines(report):
    """The numbered mark of each step is on the source line the step names."""
    _, text, findings = report
    n, d = next((n, f) for n, f in enumerate(findings, 1) if f["filename"].endswith("seed1_bmm_attention_helper.py"))
    lines = (ROOT / "fixtures" / "seed1_bmm_attention_helper.py").read_text().splitlines()
    article = text.split(f'<article class="finding sev-error" id="f{n}"', 1)[1].split("</article>", 1)[0]
    for i, step in enumerate(d["path"], 1):
        row = re.search(rf'<span class="no">(\d+)</span>(?:(?!<span class="no">).)*?id="f{n}-s{i}"', article, re.S)
        assert row is not None and int(row.group(1)) == step["row"], (i, step)
        line = re.search(rf'<span class="line step-line"><span class="no">{step["row"]}</span>(.*?)</span>\n?(?=<span class="line|</pre>)',
                         article, re.S)
        tokens = re.findall(r"<mark[^>]*>([^<]*)</mark>", line.group(1))
        assert tokens and all(t in lines[step["row"] - 1] for t in tokens)
        col = step["column"] - 1
        assert any(lines[step["row"] - 1][col:col + len(t)] == t for t in tokens)  # the token at the step's column


def test_fix_is_shown_as_a_diff(report):
    _, text, findings = report
    fixed = [d for d in findings if d["fix"]]
    assert fixed
    page = Page(text)
    assert len(page.with_class("fix", "details")) == len(fixed)
    d = fixed[0]
    edit = d["fix"]["edits"][0]
    assert f'<span class="meta">--- a/{d["filename"]}</span>' in text
    assert re.search(r'<span class="add">\+[^<]*' + re.escape(edit["content"].replace("<", "&lt;")), text)


def test_filters_and_charts_cover_rules_and_folders(report):
    _, text, findings = report
    page = Page(text)
    codes = sorted({d["code"] for d in findings})
    files = sorted({d["filename"] for d in findings})
    rule_options = [a["value"] for t, a in page.elements if t == "option"][1:len(codes) + 1]
    assert rule_options == codes
    assert all(f'<option value="{f}">' in text for f in files)
    bars = page.with_class("bar", "g")
    assert sorted(b["data-value"] for b in bars if b["data-kind"] == "rule") == codes
    assert sorted(b["data-value"] for b in bars if b["data-kind"] == "folder") == [".", "models"]
    # each rule's documentation is in the page once, and every finding links to its rule's
    assert sorted(a["id"] for a in page.find("details") if a.get("id", "").startswith("rule-")) == [
        f"rule-{c}" for c in codes]
    assert len(page.find("a", href=f"#rule-{codes[0]}")) == sum(1 for d in findings if d["code"] == codes[0])


def test_notebook_findings_show_their_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    src = (ROOT / "fixtures" / "seed1_bmm_attention_helper.py").read_text()
    head, rest = src.split("\n\n\nclass CrossAttention", 1)
    (tmp_path / "nb.ipynb").write_text(make_notebook([
        ("markdown", "# U-Net attention\n"), ("code", "%matplotlib inline\n" + head + "\n"),
        ("code", "class CrossAttention" + rest)]))
    res = run_cli("--output-format", "html", "nb.ipynb")
    assert res.exit_code == 1
    page = Page(res.output)
    assert not page.errors
    heads = re.findall(r'<div class="region-head">([^<]*)', res.output)
    assert {h.split(" · <")[0].rstrip(" ·") for h in heads} == {"nb.ipynb · cell 2", "nb.ipynb · cell 3"}
    assert "%matplotlib inline" not in res.output.split('<span class="no">1</span>', 1)[0]  # sane start
    assert "nb.ipynb:cell 3:" in res.output


def test_clean_run_is_a_page_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text("import torch\nx = torch.ones(2)\n")
    res = run_cli("--output-format", "html", "ok.py")
    assert res.exit_code == 0 and "no dtype hazards found" in res.output
    assert not Page(res.output).errors


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-quic"]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_renders_in_headless_chromium_with_the_arrows_drawn(report, tmp_path):
    out, _, findings = report
    profile = tmp_path / "profile"
    res = subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=3000",
                          "--window-size=1400,2000", "--dump-dom", out.as_uri()],
                         capture_output=True, text=True, timeout=120)
    dom = res.stdout
    assert "<article" in dom, res.stderr[-2000:]
    # the script drew one arrow between consecutive marks of each code block, with an arrowhead
    blocks = re.findall(r'<svg class="arrows"[^>]*>(.*?)</svg>', dom, re.S)
    arrows = sum(len(re.findall(r'<path d="M[\d.,\- C]+"', b)) for b in blocks)
    expected = sum(max(0, n - 1) for n in _marks_per_block(out.read_text()))
    assert arrows == expected > 0
    assert 'marker-end="url(#arrowhead-' in dom
    assert re.search(r'id="shown"[^>]*>\d+ shown<', dom)
    shot = tmp_path / "report.png"
    subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=3000",
                    "--window-size=1400,1600", f"--screenshot={shot}", out.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000


def _marks_per_block(text: str) -> list[int]:
    return [block.split("</pre>")[0].count('<a class="pin ') for block in text.split('<div class="codeblock">')[1:]]
