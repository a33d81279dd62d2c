"""The documentation site: `mkdocs build --strict` passes, and every URL dtypelint prints points at a page it builds.

Needs the `docs` extra (mkdocs); CI installs it (`pip install '.[test,docs]'`), elsewhere the test skips.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from urllib.parse import urlparse

import pytest
import yaml

from conftest import ROOT, run_cli
from dtypelint.catalog import load_catalog
from dtypelint.lsp.jupyter import spec as jupyter_spec


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def page_for(site, url: str):
    """The built file a documentation URL is served from (site_url from mkdocs.yml, directory URLs)."""
    base = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["site_url"]
    assert url.startswith(base), (url, base)
    rel = urlparse(url).path[len(urlparse(base).path):]
    return site / rel / "index.html" if rel.endswith("/") or not rel else site / rel


def test_every_rule_url_is_a_built_page(site):
    for spec in load_catalog().values():
        page = page_for(site, spec.url)
        assert page.is_file(), f"{spec.code}: {spec.url} -> {page} not built"
        assert spec.code in page.read_text(encoding="utf-8")


def test_every_diagnostic_url_is_a_built_page(site, tmp_path, monkeypatch):
    """The URLs of real diagnostics (fixtures, and the file problems DTL001-DTL004) resolve."""
    monkeypatch.chdir(tmp_path)
    for name in ("seed1_dit_vanilla_attention.py", "seed5_t5_keep_fp32.py", "dtl105_moe_dispatch.py",
                 "dtl106_masked_attention_overflow.py", "seed2_cosine_flash.py", "seed4_rwkv_chunk.py"):
        shutil.copy(ROOT / "fixtures" / name, tmp_path / name)
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n")
    (tmp_path / "latin.py").write_bytes(b"import torch\nx = '\xe9'\n")
    (tmp_path / "blob.py").write_bytes(b"\x00\x01torch\x00")
    findings = json.loads(run_cli("--output-format", "json", ".").output)
    codes = {d["code"] for d in findings}
    assert {"DTL001", "DTL002", "DTL003", "DTL101", "DTL104"} <= codes, codes
    for d in findings:
        assert d["url"] and page_for(site, d["url"]).is_file(), d["url"]


def test_other_links_dtypelint_prints(site):
    home = jupyter_spec(None)["dtypelint"]["urls"]["home"]
    assert page_for(site, home).is_file()
