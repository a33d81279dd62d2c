"""The docs: generated rule pages are up to date, every configuration key and output format is documented."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from dtypelint import docsgen
from dtypelint.catalog import catalog_dir
from dtypelint.config import KNOWN_KEYS
from dtypelint.reporters import REPORTERS

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_rule_pages_are_up_to_date():
    stale = docsgen.stale(DOCS / "rules")
    assert not stale, f"docs/rules is out of date ({', '.join(stale)}): run `python -m dtypelint.docsgen`"


def test_every_rule_has_a_page_and_an_index_entry():
    index = (DOCS / "rules" / "index.md").read_text()
    for path in catalog_dir().glob("DTL*.toml"):
        spec = docsgen.load_rule(path)
        page = DOCS / "rules" / docsgen.page_name(spec)
        assert page.is_file()
        assert spec.render_markdown() in page.read_text()
        assert f"]({page.name})" in index
        assert spec.url.endswith(f"/rules/{page.stem}/")  # the URL in diagnostics points at this page


def test_docsgen_check_mode(tmp_path):
    env_root = str(Path(__file__).resolve().parent.parent)
    run = lambda *a: subprocess.run([sys.executable, "-m", "dtypelint.docsgen", "--out", str(tmp_path), *a],  # noqa: E731
                                    capture_output=True, text=True, env={"PYTHONPATH": env_root, "PATH": "/usr/bin:/bin"})
    assert run("--check").returncode == 1
    assert run().returncode == 0
    assert run("--check").returncode == 0
    (tmp_path / "DTL999-gone.md").write_text("stale")
    (tmp_path / "index.md").write_text("edited by hand")
    res = run("--check")
    assert res.returncode == 1 and "DTL999-gone.md" in res.stderr and "index.md" in res.stderr
    run()
    assert not (tmp_path / "DTL999-gone.md").exists()


def test_every_configuration_key_is_documented():
    text = (DOCS / "configuration.md").read_text()
    headings = set(re.findall(r"^### `([a-z-]+)`$", text, re.M))
    assert headings == set(KNOWN_KEYS)


def test_every_output_format_is_documented():
    text = (DOCS / "ci.md").read_text() + (DOCS / "getting-started.md").read_text()
    for name in REPORTERS:
        assert f"`{name}`" in text, name


def test_internal_links_resolve():
    for page in DOCS.rglob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).is_file(), f"{page}: broken link {target}"
