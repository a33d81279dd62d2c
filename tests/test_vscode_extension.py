"""The VS Code extension (``editors/vscode``): install, type-check and bundle, Node unit tests, ``.vsix``.

It runs only where ``node`` and ``npm`` are installed (CI's machines have them) and skips with a message
otherwise.  ``npm ci`` installs exactly ``package-lock.json`` from the npm registry (nothing else is
downloaded); an up-to-date ``node_modules`` is reused.  What needs a VS Code binary (the client talking to
the server inside the editor) is not tested here; the server side of that conversation is ``test_lsp.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

EXT = ROOT / "editors" / "vscode"
NODE, NPM = shutil.which("node"), shutil.which("npm")
needs_node = pytest.mark.skipif(
    NODE is None or NPM is None,
    reason="node/npm are not installed: the VS Code extension's build and unit tests cannot run here",
)


def npm(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false",
           "npm_config_audit": "false", "NO_COLOR": "1"}
    res = subprocess.run([NPM, *args], cwd=EXT, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"npm {' '.join(args)} failed ({res.returncode}):\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    return res


def _installed() -> bool:
    marker = EXT / "node_modules" / ".package-lock.json"
    return marker.is_file() and marker.stat().st_mtime >= (EXT / "package-lock.json").stat().st_mtime


@pytest.fixture(scope="module")
def vsix(tmp_path_factory) -> Path:
    if not _installed():
        npm("ci", "--prefer-offline")
    out = tmp_path_factory.mktemp("vsix") / "dtypelint.vsix"
    npm("run", "package", "--", "--out", str(out))  # vscode:prepublish type-checks and bundles first
    return out


@needs_node
def test_unit_tests_pass(vsix):
    res = npm("test")
    assert "# fail 0" in res.stdout and "# pass " in res.stdout, res.stdout[-3000:]


@needs_node
def test_vsix_holds_the_bundle_and_the_manifest(vsix):
    with zipfile.ZipFile(vsix) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("extension/package.json"))
        bundle = zf.read("extension/dist/extension.js")
    assert {"extension.vsixmanifest", "extension/dist/extension.js", "extension/readme.md"} <= names
    assert not any("node_modules" in n or n.startswith("extension/src/") for n in names), sorted(names)
    assert manifest["main"] == "./dist/extension.js"
    assert any(c["command"] == "dtypelint.fixAll" and c["title"] == "Fix all dtype hazards"
               for c in manifest["contributes"]["commands"])
    assert b"source.fixAll.dtypelint" in bundle and b"vscode-notebook-cell" in bundle


def test_lock_file_pins_every_package_from_the_npm_registry():
    """`npm ci` installs exactly these, each checked against its hash; nothing comes from elsewhere."""
    lock = json.loads((EXT / "package-lock.json").read_text())
    packages = {name: p for name, p in lock["packages"].items() if name}
    assert packages and all(p.get("integrity", "").startswith("sha512-") for p in packages.values() if not p.get("link"))
    resolved = [p["resolved"] for p in packages.values() if "resolved" in p]
    assert all(u.startswith("https://registry.npmjs.org/") for u in resolved), resolved[:5]
    assert {"node_modules/vscode-languageclient", "node_modules/@vscode/vsce"} <= set(packages)
