"""The composite GitHub action (`action.yml`) and the workflows in `docs/ci.md`.

Validated against the JSON schemas of SchemaStore that `check-jsonschema` (a PyPI package, in the test
extra) ships for GitHub action metadata and workflows; then the action's shell steps are run here, in
order, the way the runner runs them (inputs and step outputs substituted, GITHUB_OUTPUT collected),
against a project with findings.  Not run here: the install step (it creates a virtual environment
from PyPI; the tests put this interpreter where it would be) and the `uses:` step
(github/codeql-action/upload-sarif needs GitHub).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

ACTION = ROOT / "action.yml"
EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is not installed (pip install '.[test]')")
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_action_metadata_validates_against_the_github_action_schema():
    res = check_jsonschema("vendor.github-actions", ACTION)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_broken_action_fails_the_schema(tmp_path):
    """The validation can fail: a composite step without `shell` is not a valid action."""
    action = yaml.safe_load(ACTION.read_text())
    del action["runs"]["steps"][0]["shell"]
    broken = tmp_path / "action.yml"
    broken.write_text(yaml.safe_dump(action))
    assert check_jsonschema("vendor.github-actions", broken).returncode == 1


def test_workflows_in_the_docs_validate(tmp_path):
    text = (ROOT / "docs" / "ci.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "jobs:" in b and "runs-on" in b]
    assert len(blocks) >= 2
    files = []
    for i, block in enumerate(blocks):
        files.append(tmp_path / f"workflow{i}.yml")
        files[-1].write_text(block)
    res = check_jsonschema("vendor.github-workflows", *files)
    assert res.returncode == 0, res.stdout + res.stderr
    uses = [step.get("uses", "") for b in blocks for job in yaml.safe_load(b)["jobs"].values() for step in job["steps"]]
    assert any(u.startswith("dtypelint/dtypelint@") for u in uses)  # the action is documented
    assert "github/codeql-action/upload-sarif@v3" in uses


def test_inputs_and_outputs_are_consistent():
    action = yaml.safe_load(ACTION.read_text())
    used = set()
    for step in action["runs"]["steps"]:
        for value in [*step.get("env", {}).values(), *step.get("with", {}).values(), step.get("if", ""), step.get("run", "")]:
            used.update(re.findall(r"inputs\.([\w-]+)", str(value)))
        assert "${{ inputs." not in step.get("run", ""), "inputs reach scripts through env (no script injection)"
    assert set(action["inputs"]) == used
    assert [s["uses"] for s in action["runs"]["steps"] if "uses" in s] == ["github/codeql-action/upload-sarif@v3"]
    ids = {s.get("id") for s in action["runs"]["steps"]}
    for out in action["outputs"].values():
        assert EXPR.search(out["value"]).group(1).split(".")[1] in ids


class Runner:
    """Runs the action's `shell: bash` steps like the GitHub runner: env from inputs and step outputs."""

    def __init__(self, workspace: Path, temp: Path, inputs: dict[str, str]):
        self.action = yaml.safe_load(ACTION.read_text())
        self.inputs = {k: str(v.get("default", "")) for k, v in self.action["inputs"].items()}
        self.inputs.update(inputs)
        self.workspace, self.temp = workspace, temp
        self.outputs: dict[str, dict[str, str]] = {}
        self.log: list[str] = []

    def value(self, expr: str) -> str:
        scope, _, rest = expr.partition(".")
        if scope == "inputs":
            return self.inputs[rest]
        if scope == "steps":
            step, _, name = rest.partition(".outputs.")
            return self.outputs.get(step, {}).get(name, "")
        if expr == "github.action_path":
            return str(ROOT)
        raise AssertionError(f"unsupported expression {expr}")

    def substitute(self, text: str) -> str:
        return EXPR.sub(lambda m: self.value(m.group(1)), text)

    def run(self, name: str) -> subprocess.CompletedProcess:
        (step,) = [s for s in self.action["runs"]["steps"] if s["name"] == name]
        assert step["shell"] == "bash"
        out_file = self.temp / f"output-{len(self.log)}"
        out_file.write_text("")
        env = {"PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(self.temp), "GITHUB_OUTPUT": str(out_file),
               "HOME": str(self.temp), "DTYPELINT_CACHE_DIR": str(self.temp / "cache"), "NO_COLOR": "1"}
        env.update({k: self.substitute(str(v)) for k, v in step.get("env", {}).items()})
        # the runner's own invocation of a bash step: bash --noprofile --norc -eo pipefail {0}
        script = self.temp / "step.sh"
        script.write_text(step["run"])
        res = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.workspace,
                             env=env, capture_output=True, text=True, timeout=300)
        self.log.append(name)
        outputs = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if "=" in line)
        self.outputs[step.get("id", name)] = outputs
        return res


@pytest.fixture
def runner_env(tmp_path):
    """A workspace with two hazards, and the action's virtual environment standing in as this interpreter's."""
    work = tmp_path / "repo"
    (work / "models").mkdir(parents=True)
    shutil.copy(ROOT / "fixtures" / "seed1_bmm_attention_helper.py", work / "models" / "attn.py")
    (work / "README.md").write_text("# not python\n")
    temp = tmp_path / "runner"
    bin_dir = temp / "dtypelint-venv" / "bin"
    bin_dir.mkdir(parents=True)
    # what the install step would create: a dtypelint and a python in $RUNNER_TEMP/dtypelint-venv/bin
    (bin_dir / "python").symlink_to(sys.executable)
    (bin_dir / "dtypelint").write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m dtypelint \"$@\"\n")
    (bin_dir / "dtypelint").chmod(0o755)
    return work, temp


def test_the_action_steps_report_annotate_and_fail(runner_env):
    work, temp = runner_env
    runner = Runner(work, temp, {"paths": "models", "args": "--select DTL1"})
    res = runner.run("Check (SARIF)")
    assert res.returncode == 0, res.stderr
    assert runner.outputs["check"] == {"findings": "2", "sarif-file": "dtypelint.sarif"}
    sarif = (work / "dtypelint.sarif").read_text()
    assert '"codeFlows"' in sarif and "models/attn.py" in sarif
    res = runner.run("Annotate the diff")
    assert res.returncode == 0, res.stderr
    annotations = [line for line in res.stdout.splitlines() if line.startswith("::error file=models/attn.py")]
    assert len(annotations) == 2 and all("%0A  1. models/attn.py:8:17" in a for a in annotations)
    res = runner.run("Fail on findings")  # its `if:` holds: findings != '0'
    assert res.returncode == 1 and "::error title=dtypelint::2 finding(s)" in res.stdout


def test_the_action_with_a_baseline_reports_only_new_findings(runner_env):
    work, temp = runner_env
    subprocess.run([str(temp / "dtypelint-venv" / "bin" / "dtypelint"), "check", "--write-baseline", "base.json",
                    "models"], cwd=work, check=True, capture_output=True, env={"PATH": "/usr/bin:/bin",
                                                                              "DTYPELINT_CACHE_DIR": str(temp / "c")})
    runner = Runner(work, temp, {"paths": "models", "baseline": "base.json"})
    res = runner.run("Check (SARIF)")
    assert res.returncode == 0, res.stderr
    assert runner.outputs["check"]["findings"] == "0"  # so "Fail on findings" is skipped
    res = runner.run("Annotate the diff")
    assert res.returncode == 0 and "::error" not in res.stdout
