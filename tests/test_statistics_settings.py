"""`check --statistics` (findings and fixes per rule) and `check --show-settings` (effective settings and their sources)."""

from __future__ import annotations

import json
import shutil

from conftest import ROOT, run_cli


def _fixtures(project, *names):
    for name in names:
        shutil.copy(ROOT / "fixtures" / name, project / name)


def test_statistics_counts_per_rule_and_fixable(project):
    _fixtures(project, "seed1_bmm_attention_helper.py", "seed5_t5_keep_fp32.py", "dtl105_moe_dispatch.py")
    findings = json.loads(run_cli("--output-format", "json", ".").output)
    res = run_cli("--statistics", ".")
    assert res.exit_code == 1  # the same exit code as the findings would give
    rows = [line.split() for line in res.output.splitlines()[:-1]]
    by_code = {}
    for d in findings:
        by_code.setdefault(d["code"], []).append(d)
    assert [r[1] for r in rows] == sorted(by_code, key=lambda c: (-len(by_code[c]), c))  # most frequent first
    for r in rows:
        diags = by_code[r[1]]
        safe = sum(1 for d in diags if d["fix"] and d["fix"]["applicability"] == "safe")
        assert int(r[0]) == len(diags)
        assert f"({safe} fixable" in " ".join(r)
    assert res.output.splitlines()[-1] == (f"Found {len(findings)} findings; [*] "
                                           f"{sum(1 for d in findings if d['fix'] and d['fix']['applicability'] == 'safe')}"
                                           " fixable with the `--fix` option.")


def test_statistics_json_and_unsafe_fixes(project):
    _fixtures(project, "seed5_t5_keep_fp32.py")
    plain = json.loads(run_cli("--statistics", "--output-format", "json", ".").output)
    unsafe = json.loads(run_cli("--statistics", "--output-format", "json", "--unsafe-fixes", ".").output)
    (row,) = [r for r in plain if r["code"] == "DTL104"]
    assert row["fixable"] == 0 and row["unsafe_fixes"] == row["count"] > 0  # DTL104's fix is unsafe
    (row,) = [r for r in unsafe if r["code"] == "DTL104"]
    assert row["fixable"] == row["count"] and row["unsafe_fixes"] == 0


def test_statistics_of_a_clean_run(project):
    (project / "ok.py").write_text("import torch\n")
    res = run_cli("--statistics", "ok.py")
    assert res.exit_code == 0 and res.output == "No findings.\n"


def test_show_settings_names_the_source_of_each_value(project):
    (project / "pyproject.toml").write_text(
        '[tool.dtypelint]\nignore = ["DTL105"]\ncompute-dtype = "bf16"\n'
        '[tool.dtypelint.per-file-ignores]\n"legacy_*.py" = ["DTL101"]\n')
    (project / "sub").mkdir()
    (project / "sub" / "legacy_model.py").write_text("import torch\n")
    res = run_cli("--show-settings", "--select", "DTL1", "sub/legacy_model.py")
    assert res.exit_code == 0, res.output
    lines = {line.split("=")[0].strip(): line for line in res.output.splitlines() if " = " in line}
    config = f"{project / 'pyproject.toml'}: [tool.dtypelint]"
    assert lines["select"].endswith("# command line") and '["DTL1"]' in lines["select"]
    assert lines["ignore"].endswith(f"# {config}")
    assert '"bfloat16"' in lines["compute-dtype"] and lines["compute-dtype"].endswith(f"# {config}")
    assert lines["regimes"].endswith("# default")
    # DTL1 selected, DTL105 ignored, DTL101 ignored for legacy_*.py
    assert "DTL102, DTL103, DTL104, DTL106" in lines["enabled rules"] and "DTL101" not in lines["enabled rules"]
    info = json.loads(run_cli("--show-settings", "--output-format", "json", "sub/legacy_model.py").output)
    assert info["configuration_file"] == str(project / "pyproject.toml")
    assert info["settings"]["select"] == {"value": None, "source": "default"}
    assert info["settings"]["per-file-ignores"]["value"] == {"legacy_*.py": ["DTL101"]}
    assert "DTL001" in info["enabled_rules"] and "DTL105" not in info["enabled_rules"]


def test_show_settings_isolated_and_dtypelint_toml(project):
    (project / "dtypelint.toml").write_text('regimes = ["half"]\n')
    info = json.loads(run_cli("--show-settings", "--output-format", "json", ".").output)
    assert info["settings"]["regimes"] == {"value": ["half"], "source": f"{project / 'dtypelint.toml'}"}
    info = json.loads(run_cli("--show-settings", "--output-format", "json", "--isolated", ".").output)
    assert info["configuration_file"] is None and info["settings"]["regimes"]["source"] == "default"


def test_show_settings_with_a_bad_config_is_a_usage_error(project):
    (project / "dtypelint.toml").write_text('regimes = ["warp"]\n')
    res = run_cli("--show-settings", ".")
    assert res.exit_code == 2 and "regimes" in (res.output + (res.stderr or ""))
