from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import fakerule  # noqa: E402

MODEL = '''\
import torch


class Attention(torch.nn.Module):
    def forward(self, x, w):
        a = x.float()
        return torch.mm(a, w)
'''


@pytest.fixture
def fake_rule():
    """Install the DTL999 stand-in rule for this test."""
    uninstall = fakerule.install()
    yield fakerule
    uninstall()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project folder that is the working folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DTYPELINT_CACHE_DIR", str(tmp_path / ".cache"))
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    monkeypatch.delenv("DTYPELINT_OUTPUT_FORMAT", raising=False)
    return tmp_path


def run_cli(*args: str, input: str | None = None):
    """Run the dtypelint CLI in this process (one job: no worker processes)."""
    from dtypelint.cli import cli

    result = CliRunner().invoke(cli, ["check", "-j", "1", "--no-cache", *args] if args and args[0] != "--raw"
                                else list(args[1:]), input=input, catch_exceptions=False)
    return result


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("DTYPELINT_OUTPUT_FORMAT", None)
    env["NO_COLOR"] = "1"
    return env
