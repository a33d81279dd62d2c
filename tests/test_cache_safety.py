"""The cache is untrusted input: data only (never pickle), validated, rebuilt when wrong, safe under concurrency."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import FAKE_CODE, cli_env, write_tree
from dtypelint import __version__, analysis, rules
from dtypelint.cache import FORMAT_VERSION, Cache
from dtypelint.cache_codec import CodecError, dumps, loads

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


# -- the codec ----------------------------------------------------------------------------


def test_codec_round_trips_the_data_model():
    from dtypelint.diagnostics import Position

    value = {"a": (1, 2.5, None, True, "x" * 100, "x" * 100), "b": [1, [2, (3,)]], "c": {"k": ()},
             "d": {(1, "t"): "tuple key", 3: "int key"}, "e": frozenset({"p", "q"}),
             "__dc__": "a plain key that looks like a marker", "pos": Position(3, 4), "nan": float("inf")}
    back = loads(dumps(value))
    assert back == value
    assert type(back["a"]) is tuple and type(back["b"]) is list and type(back["b"][1][1]) is tuple
    assert back["pos"] == Position(3, 4) and type(back["pos"]) is Position


def test_codec_round_trips_the_summaries_of_every_fixture():
    """Every project-index entry the analysis produces survives the codec as an equal value with the same
    repr (the index digest dependants' cached results are keyed on); a field type the codec cannot hold
    fails here."""
    seen = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        entries = analysis.summarize(path.read_text(encoding="utf-8"), path.stem, str(path))
        back = loads(dumps(entries))
        assert back == entries and repr(back) == repr(entries), path
        for key, value in entries.items():
            for name in getattr(value, "__dataclass_fields__", {}):  # compare=False fields too
                assert getattr(back[key], name) == getattr(value, name), (path, key, name)
        seen += len(entries)
    assert seen > 20  # one module entry per fixture


def test_long_strings_are_stored_once():
    text = "def f():\n    pass\n" * 50
    assert len(dumps((text,) * 20)) < 2 * len(text)


@dataclass(frozen=True)
class NotOurs:  # defined in a test module: not a dtypelint class
    x: int = 0


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


@pytest.mark.parametrize("value", [NotOurs(), Evil(), {1, 2}, b"bytes", Path("p"), object()])
def test_codec_refuses_to_encode_anything_outside_the_data_model(value):
    with pytest.raises(CodecError):
        dumps(value)


def _payload(value_json: str, table: list[str] | None = None) -> bytes:
    return (json.dumps(table or []) + "\n" + value_json + "\n").encode()


@pytest.mark.parametrize("value_json", [
    '{"__dc__": "os:system"}',  # not a dtypelint module
    '{"__dc__": "subprocess:Popen", "args": "x"}',
    '{"__dc__": "dtypelint.cache:Cache", "root": "x"}',  # a dtypelint class, but not a dataclass
    '{"__dc__": "dtypelint.diagnostics:Position", "row": 1}',  # a missing field
    '{"__dc__": "dtypelint.diagnostics:Position", "row": 1, "column": 2, "extra": 3}',  # an unknown field
    '{"__dc__": "dtypelint.nosuchmodule:X"}',
    '{"__dc__": "dtypelint.analysis.nosuchmodule:X"}',
    '{"__dc__": "dtypelint.diagnostics:Position.__init__.__globals__"}',
    '{"__dc__": "dtypelint.diagnostics:os.path"}',
    '{"__dc__": 3}',
    '{"__t__": 1}',
    '{"__s__": 5}',
    '{"__t__": [], "x": 1}',
    '{"__dict__": [[1]]}',
    '{"__dict__": [[[1], 2]]}',
    "[1, 2",
    "",
])
def test_codec_refuses_payloads_it_did_not_write(value_json):
    with pytest.raises(CodecError):
        loads(_payload(value_json))


def test_decoding_never_imports_a_module_outside_dtypelint(monkeypatch):
    import importlib

    imported: list[str] = []
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda name, *a: imported.append(name) or real(name, *a))
    for name in ("json.tool:X", "antigravity:X", "this:X", "dtypelint_evil:X", "dtypelintx.y:X"):
        with pytest.raises(CodecError):
            loads(_payload(json.dumps({"__dc__": name})))
    assert imported == []
    assert "antigravity" not in sys.modules and "this" not in sys.modules


def test_codec_rejects_deep_nesting_without_crashing():
    with pytest.raises(CodecError):
        loads(_payload("[" * 100000 + "]" * 100000))


# -- the cache ----------------------------------------------------------------------------


def entry_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if not p.name.startswith(".tmp-"))


def test_entries_are_json_with_an_envelope_naming_format_and_version(tmp_path):
    cache = Cache(tmp_path)
    cache.put("summary", "ab" * 32, {"m.C": ("x", 1)})
    (path,) = entry_files(tmp_path)
    head, table, value = path.read_text().splitlines()
    envelope = json.loads(head)
    assert envelope["format"] == FORMAT_VERSION and envelope["version"] == __version__
    assert envelope["kind"] == "summary" and envelope["key"] == "ab" * 32
    assert __version__ in path.relative_to(tmp_path).parts[0]
    assert cache.get("summary", "ab" * 32) == {"m.C": ("x", 1)}
    assert not list(tmp_path.rglob("*.pickle"))


def _mutations(data: bytes) -> dict[str, bytes]:
    head, rest = data.split(b"\n", 1)
    envelope = json.loads(head)
    other = lambda **kw: json.dumps({**envelope, **kw}, sort_keys=True).encode() + b"\n" + rest  # noqa: E731
    return {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "garbage": os.urandom(200),
        "other version": other(version="0.0.0-other"),
        "other format": other(format=FORMAT_VERSION + 1),
        "other build": other(build="0" * 16),
        "moved from another key": other(key="cd" * 32),
        "other kind": other(kind="summary"),
        "pickle": pickle.dumps({"deps": {}, "parsed": True, "failed": False, "diagnostics": []}),
        "wrong shape": head + b"\n[]\n" + json.dumps({"deps": [], "parsed": 1}).encode() + b"\n",
        "bad diagnostic": head + b"\n[]\n" + json.dumps(
            {"deps": {}, "parsed": True, "failed": False, "diagnostics": [{"code": 1}]}).encode() + b"\n",
    }


@pytest.mark.parametrize("damage", list(_mutations(b'{"a": 1}\n[]\n1\n')))
def test_a_damaged_entry_is_a_miss_and_is_rebuilt(tmp_path, monkeypatch, invoke, hazard_rule, damage):
    calls: list[str] = []
    real = rules.check
    monkeypatch.setattr(rules, "check", lambda ctx: calls.append(ctx.filename) or real(ctx))
    write_tree(tmp_path, {"a.py": "import torch\nx = HAZARD\n"})
    monkeypatch.chdir(tmp_path)
    first = invoke(["check", "--in-process", "--output-format", "json"])
    (entry,) = [p for p in entry_files(tmp_path / ".dtypelint_cache") if "check" in p.parts]
    good = entry.read_bytes()
    entry.write_bytes(_mutations(good)[damage])
    second = invoke(["check", "--in-process", "--output-format", "json"])
    assert calls == ["a.py", "a.py"]  # not trusted: analysed again
    assert json.loads(second.stdout) == json.loads(first.stdout)
    assert entry.read_bytes() == good  # and rebuilt
    invoke(["check", "--in-process"])
    assert calls == ["a.py", "a.py"]  # the rebuilt entry is used


def test_entries_that_are_not_regular_files_are_misses(tmp_path):
    cache = Cache(tmp_path)
    cache.put("check", "ab" * 32, {"deps": {}, "parsed": True, "failed": False, "diagnostics": []})
    (path,) = entry_files(tmp_path)
    target = tmp_path / "elsewhere.json"
    path.rename(target)
    path.symlink_to(target)
    assert cache.get("check", "ab" * 32) is None  # a symlink is not followed
    path.unlink()
    os.mkfifo(path)
    assert cache.get("check", "ab" * 32) is None  # a FIFO does not block the run


def test_a_planted_pickle_never_executes(tmp_path, monkeypatch, invoke, hazard_rule):
    """Someone who can write the cache folder plants a pickle where an entry would be."""
    write_tree(tmp_path, {"a.py": "import torch\nx = HAZARD\n"})
    monkeypatch.chdir(tmp_path)
    invoke(["check", "--in-process"])
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (Path.write_text, (marker, "code ran"))

    for entry in entry_files(tmp_path / ".dtypelint_cache"):
        entry.write_bytes(pickle.dumps(Payload()))
        entry.with_suffix(".pickle").write_bytes(pickle.dumps(Payload()))  # the old layout, too
    assert invoke(["check", "--in-process"]).exit_code == 1
    assert not marker.exists()


CONCURRENT = """
import sys
from dtypelint.cache import Cache
cache = Cache(__import__("pathlib").Path(sys.argv[1]))
me = int(sys.argv[2])
value = {"deps": {"k": "v"}, "parsed": True, "failed": False, "diagnostics": []}
for round in range(100):
    for key in range(20):
        k = f"{key:064x}"
        cache.put("check", k, value)
        got = cache.get("check", k)
        if got not in (None, value):
            print("CORRUPT", k, got)
            sys.exit(1)
print("ok")
"""


def test_two_processes_sharing_a_cache_folder_never_read_a_torn_entry(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(tmp_path), str(i)], env=cli_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == b"ok", (out, err)
    assert len(entry_files(tmp_path)) == 20
    assert not [p for p in tmp_path.rglob(".tmp-*")]  # no temporary file left behind


def test_two_concurrent_cli_runs_share_a_cache_and_agree(tmp_path):
    files = {f"pkg/m{i}.py": f"import torch\n\nclass M{i}(torch.nn.Module):\n    def forward(self, x):\n"
             f"        return torch.mm(x.float(), x)\n" for i in range(30)}
    write_tree(tmp_path, files)
    env = cli_env(DTYPELINT_CACHE_DIR=str(tmp_path / "shared"))
    cmd = [sys.executable, "-m", "dtypelint", "check", "--output-format", "json", "-j", "2", "pkg"]
    procs = [subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [1, 1], outs
    warm = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, timeout=300)
    cold = subprocess.run(cmd + ["--no-cache"], cwd=tmp_path, env=env, capture_output=True, timeout=300)
    results = [json.loads(o) for o, _ in outs] + [json.loads(warm.stdout), json.loads(cold.stdout)]
    assert all(r == results[-1] for r in results) and len(results[-1]) == 30


def test_fake_rule_results_survive_the_cache(tmp_path, monkeypatch, invoke, hazard_rule):
    """Diagnostics read back from the cache equal the freshly computed ones, fixes included."""
    write_tree(tmp_path, {"a.py": "import torch\nx = HAZARD\ny = HAZARD\n"})
    monkeypatch.chdir(tmp_path)
    cold = invoke(["check", "--in-process", "--no-cache", "--output-format", "json", "--select", FAKE_CODE])
    invoke(["check", "--in-process", "--output-format", "json", "--select", FAKE_CODE])
    warm = invoke(["check", "--in-process", "--output-format", "json", "--select", FAKE_CODE])
    assert json.loads(warm.stdout) == json.loads(cold.stdout) and len(json.loads(cold.stdout)) == 2
