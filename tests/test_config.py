"""Configuration discovery, validation and effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import FAKE_CODE, run_module, write_tree
from dtypelint.config import ConfigError, ConfigResolver, glob_match
from dtypelint.engine import known_codes

MODEL = "import torch\nx = HAZARD\n"


def resolver(tmp_path: Path, **kw) -> ConfigResolver:
    return ConfigResolver(known_codes=known_codes(), cwd=tmp_path, **kw)


def test_nearest_pyproject_applies_and_pyproject_without_table_is_skipped(tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": '[tool.dtypelint]\ncompute-dtype = "bfloat16"\n',
        "sub/pyproject.toml": '[project]\nname = "x"\n',  # no [tool.dtypelint]: keep looking up
        "sub/deeper/dtypelint.toml": 'regimes = ["half"]\n',
        "sub/m.py": "",
        "sub/deeper/m.py": "",
    })
    r = resolver(tmp_path)
    s1 = r.for_path(tmp_path / "sub" / "m.py")
    assert s1.compute_dtype == "bfloat16" and s1.config_file == tmp_path / "pyproject.toml"
    s2 = r.for_path(tmp_path / "sub" / "deeper" / "m.py")
    assert s2.regimes == ("half",) and s2.compute_dtype == "float16"  # nearest file wins, no merging


def test_config_flag_and_isolated(tmp_path):
    write_tree(tmp_path, {"pyproject.toml": '[tool.dtypelint]\nregimes = ["half"]\n', "other.toml": 'regimes = ["loaded"]\n'})
    assert resolver(tmp_path, config_file=tmp_path / "other.toml").for_path(tmp_path).regimes == ("loaded",)
    assert resolver(tmp_path, isolated=True).for_path(tmp_path).regimes == ("autocast", "half", "loaded")


@pytest.mark.parametrize("body,needle", [
    ('[tool.dtypelint]\nselct = ["DTL1"]\n', "unknown key 'selct'"),
    ('[tool.dtypelint]\nselect = "DTL1"\n', "key 'select' must be a list, got str"),
    ('[tool.dtypelint]\nignore = ["DTL999"]\n', "key 'ignore': unknown rule selector 'DTL999'"),
    ('[tool.dtypelint]\nregimes = ["training"]\n', "key 'regimes': unknown regime 'training'"),
    ('[tool.dtypelint]\ncompute-dtype = "float8"\n', "key 'compute-dtype' must be one of float16, bfloat16"),
    ('[tool.dtypelint]\nper-file-ignores = { "a.py" = "DTL001" }\n', "per-file-ignores.a.py"),
    ('[tool.dtypelint.sinks]\n"k.f" = { contract = "fast", args = ["q"] }\n', "sinks.k.f.contract"),
    ('[tool.dtypelint.sinks]\n"k.f" = { contract = "equal-dtypes" }\n', "sinks.k.f.args"),
    ('[tool.dtypelint]\nselect = [\n', "invalid TOML"),
])
def test_bad_config_exits_2_naming_key_and_file(tmp_path, body, needle):
    write_tree(tmp_path, {"pyproject.toml": body, "m.py": "import torch\n"})
    proc = run_module(["check", "--no-cache", "m.py"], cwd=tmp_path)
    assert proc.returncode == 2
    err = proc.stderr.decode()
    assert needle in err
    assert "pyproject.toml" in err
    assert len(err.strip().splitlines()) == 1


def test_bad_config_in_dtypelint_toml_is_named(tmp_path):
    write_tree(tmp_path, {"dtypelint.toml": "bogus = 1\n", "m.py": "import torch\n"})
    proc = run_module(["check", "m.py"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "dtypelint.toml: unknown key 'bogus'" in proc.stderr.decode()


def test_missing_config_flag_file(tmp_path):
    proc = run_module(["check", "--config", "nope.toml"], cwd=tmp_path)
    assert proc.returncode == 2 and "nope.toml: configuration file not found" in proc.stderr.decode()


def test_sinks_are_parsed(tmp_path):
    write_tree(tmp_path, {"dtypelint.toml": '[sinks]\n"lib.k.attn" = { contract = "half-only", args = ["q", "k"], positions = [1, 2] }\n'})
    (sink,) = resolver(tmp_path).for_path(tmp_path).sinks
    assert (sink.name, sink.contract, sink.args, sink.positions) == ("lib.k.attn", "half-only", ("q", "k"), (1, 2))


def test_select_ignore_per_file_ignores(tmp_path, hazard_rule, invoke, monkeypatch):
    write_tree(tmp_path, {
        "pyproject.toml": f'[tool.dtypelint]\nper-file-ignores = {{ "tests/*" = ["{FAKE_CODE}"] }}\n',
        "src/m.py": MODEL, "tests/t.py": MODEL,
    })
    monkeypatch.chdir(tmp_path)
    res = invoke(["check", "--in-process", "--no-cache", "--output-format", "json"])
    assert [d["filename"] for d in json.loads(res.stdout)] == ["src/m.py"]
    (tmp_path / "pyproject.toml").write_text(f'[tool.dtypelint]\nignore = ["{FAKE_CODE}"]\n')
    res = invoke(["check", "--in-process", "--no-cache"])
    assert res.exit_code == 0
    (tmp_path / "pyproject.toml").write_text('[tool.dtypelint]\nselect = ["DTL0"]\nextend-select = ["DTL19"]\n')
    assert invoke(["check", "--in-process", "--no-cache"]).exit_code == 1


def test_isolated_ignores_broken_config(tmp_path):
    write_tree(tmp_path, {"pyproject.toml": "[tool.dtypelint]\nbogus = 1\n", "m.py": "import torch\n"})
    proc = run_module(["check", "--isolated", "--no-cache", "m.py"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("pattern,path,expected", [
    ("build", "build/x.py", True),
    ("build", "src/build/x.py", True),
    ("build", "src/builder/x.py", False),
    ("*_pb2.py", "a/b/c_pb2.py", True),
    ("src/gen/**", "src/gen/a/b.py", True),
    ("src/gen", "src/gen/a.py", True),
    ("src/gen", "other/src/gen/a.py", False),
    ("tests/*", "tests/t.py", True),
    ("tests/*", "src/tests/t.py", False),
])
def test_glob_semantics(pattern, path, expected):
    assert glob_match(pattern, path) is expected


@pytest.mark.parametrize("body,needle", [
    ('[tool.dtypelint]\nrespect-gitignore = "yes"\n', "key 'respect-gitignore' must be a bool, got str"),
    ('[tool.dtypelint]\ncache-dir = 3\n', "key 'cache-dir' must be a str, got int"),
    ('[tool.dtypelint]\nexclude = [1]\n', "key 'exclude' must be a list of strings"),
    ('[tool.dtypelint]\nextend-exclude = "build"\n', "key 'extend-exclude' must be a list, got str"),
    ('[tool.dtypelint]\nsinks = 3\n', "key 'sinks' must be a dict, got int"),
    ('[tool]\ndtypelint = 3\n', "[tool.dtypelint] must be a table"),
    ('[tool.dtypelint]\nselect = ["DTL1", 3]\n', "key 'select' must be a list of strings"),
    ('[tool.dtypelint]\nextend-select = ["XYZ"]\n', "key 'extend-select': unknown rule selector 'XYZ'"),
    ('[tool.dtypelint]\nper-file-ignores = { "a.py" = ["DTL999"] }\n', "'per-file-ignores.a.py': unknown rule selector"),
    ('[tool.dtypelint]\nregimes = []\n', "key 'regimes' must not be empty"),
    ('[tool.dtypelint]\ncompute-dtype = 16\n', "key 'compute-dtype' must be a str, got int"),
    ('[tool.dtypelint.sinks]\n"k.f" = { contract = "equal-dtypes", args = ["q"], positions = [true] }\n',
     "'sinks.k.f.positions' must be a list of 1 non-negative integers"),
    ('[tool.dtypelint.sinks]\n"k.f" = { contract = "equal-dtypes", args = ["q"], color = 1 }\n',
     "unknown key 'sinks.k.f.color'"),
    ('[tool.dtypelint]\nselect = ["DTL1"]\nselect = ["DTL0"]\n', "invalid TOML"),  # a duplicate key
    (b'\xff\xfe[tool.dtypelint]\n', "cannot read configuration"),  # not UTF-8
])
def test_every_kind_of_bad_value_is_one_line_naming_file_and_key(tmp_path, body, needle):
    write_tree(tmp_path, {"pyproject.toml": body, "m.py": "import torch\n"})
    proc = run_module(["check", "--no-cache", "m.py"], cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b""
    assert needle in err and "pyproject.toml" in err and err.startswith("dtypelint: error: ")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("args,needle", [
    (["--select", "DTL999"], "--select: unknown rule selector 'DTL999'"),
    (["--ignore", "ALL,xyz"], "--ignore: unknown rule selector 'xyz'"),
    (["--extend-select", "DTL9"], "--extend-select: unknown rule selector 'DTL9'"),
    (["--config", "nope.toml"], "nope.toml: configuration file not found"),
    (["--baseline", "nope.json"], "nope.json: baseline file not found"),
    (["nope.py"], "nope.py: no such file or directory"),
])
def test_bad_command_line_values_exit_2_with_one_line(tmp_path, args, needle):
    write_tree(tmp_path, {"m.py": "import torch\n"})
    proc = run_module(["check", "--no-cache", *args, *([] if args == ["nope.py"] else ["m.py"])], cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and needle in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_bad_config_below_the_linted_folder_stops_the_run_naming_it(tmp_path):
    write_tree(tmp_path, {"a/m.py": "import torch\n", "b/dtypelint.toml": "regimes = 'half'\n", "b/m.py": "import torch\n"})
    proc = run_module(["check", "--no-cache", "."], cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "b/dtypelint.toml: key 'regimes' must be a list, got str" in err
