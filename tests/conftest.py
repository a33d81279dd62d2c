"""Shared helpers: run the CLI in-process (click's runner) or as a real process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("NO_COLOR", None)
    env.pop("FORCE_COLOR", None)
    env.update(extra)
    return env


def run_module(args: list[str], cwd: Path | None = None, input: bytes | None = None, **env: str) -> subprocess.CompletedProcess:
    """``python -m dtypelint ARGS`` in a child process."""
    return subprocess.run([sys.executable, "-m", "dtypelint", *args], cwd=cwd, input=input,
                          capture_output=True, env=cli_env(**env), timeout=300)


def console_script() -> str | None:
    """The installed ``dtypelint`` console script next to this interpreter, if any."""
    candidate = Path(sys.executable).parent / "dtypelint"
    if candidate.exists():
        return str(candidate)
    return shutil.which("dtypelint")


@pytest.fixture
def script() -> str:
    path = console_script()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("the dtypelint console script is not installed (pip install . should create it)")
        pytest.skip("dtypelint console script not installed in this environment")
    return path


def run_script(script: str, args: list[str], cwd: Path | None = None, input: bytes | None = None) -> subprocess.CompletedProcess:
    env = cli_env()
    env.pop("PYTHONPATH", None)
    return subprocess.run([script, *args], cwd=cwd, input=input, capture_output=True, env=env, timeout=300)


@pytest.fixture
def invoke():
    """Run the CLI in-process; returns click's Result (exit_code, stdout, stderr)."""
    from click.testing import CliRunner

    from dtypelint.cli import cli

    def _invoke(args: list[str], input: str | bytes | None = None):
        runner = CliRunner()
        return runner.invoke(cli, args, input=input, catch_exceptions=False)

    return _invoke


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create files under ``root`` (str content is written as UTF-8)."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


FAKE_CODE = "DTL199"


@pytest.fixture
def hazard_rule(monkeypatch):
    """Register a synthetic rule DTL199 that flags every line containing ``HAZARD``.

    Its diagnostics carry a two-step dataflow path, regimes and a safe fix that
    replaces ``HAZARD`` with ``SAFE``, so engine and reporter behaviour can be tested
    independently of the real dtype rules.
    """
    from dataclasses import replace as dc_replace

    from dtypelint import analysis, catalog, engine, problems, rules
    from dtypelint.diagnostics import Diagnostic, Edit, Fix, PathStep, Position, rule_url

    real = catalog.load_catalog()
    base = real["DTL001"]
    spec = dc_replace(base, code=FAKE_CODE, name="fake-hazard", summary="A synthetic rule for tests.",
                      regimes=("half",), fix="always", invalid=(), valid=())
    fake_catalog = {**real, FAKE_CODE: spec}
    for module in (engine, problems, catalog):  # the CLI imports it from dtypelint.catalog when it runs
        monkeypatch.setattr(module, "load_catalog", lambda: fake_catalog)

    def check(ctx):
        out = []
        for row, line in enumerate(ctx.source.text.splitlines(), 1):
            col = line.find("HAZARD")
            if col < 0:
                continue
            start, end = Position(row, col + 1), Position(row, col + 7)
            out.append(Diagnostic(
                code=FAKE_CODE, name="fake-hazard", message="`HAZARD` (float32) reaches `@` with `v` (float16)",
                severity="error", filename=ctx.filename, start=start, end=end, regimes=("half",),
                path=(PathStep(ctx.filename, 1, 1, "source: made fp32 here"),
                      PathStep(ctx.filename, row, col + 1, "sink: matmul requires equal dtypes")),
                fix=Fix("safe", "Replace `HAZARD` with `SAFE`", (Edit("SAFE", start, end),)),
                url=rule_url(FAKE_CODE, "fake-hazard"),
            ))
        return out

    monkeypatch.setattr(rules, "check", check)
    monkeypatch.setattr(analysis, "might_contain_hazard", lambda text, settings: "torch" in text)
    return FAKE_CODE


# -- helpers of the integration tests ---------------------------------------------------

ROOT = REPO
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
    """Install the DTL999 stand-in rule (tests/fakerule.py) for this test."""
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
    """Run ``dtypelint check`` in this process (no worker processes, no cache)."""
    from click.testing import CliRunner

    from dtypelint.cli import cli

    result = CliRunner().invoke(cli, ["check", "--in-process", "--no-cache", *args] if args and args[0] != "--raw"
                                else list(args[1:]), input=input, catch_exceptions=False)
    return result


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("DTYPELINT_OUTPUT_FORMAT", None)
    env["NO_COLOR"] = "1"
    return env
