"""``dtypelint check --fix`` through the real console entry point, on temporary files.

The rules come from ``tests/fakerules.py`` (installed in the subprocess before the
real CLI runs), so these tests exercise the fixer's mechanics whatever the analysis
flags.  Each test works on copies in ``tmp_path``.
"""

from __future__ import annotations

import codecs
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fakerules.py"


def dtl(*args, cwd: Path, rules: str = "DTL901,DTL902,DTL904", stdin: bytes | None = None, env=None):
    e = dict(os.environ, PYTHONPATH=str(ROOT), FAKE_RULES=rules, NO_COLOR="1")
    e.update(env or {})
    return subprocess.run([sys.executable, str(FAKE), "check", "--no-cache", *args], cwd=cwd, input=stdin,
                          capture_output=True, env=e, timeout=120)


SAMPLE = '''"""A model."""
import math


def attention(q, k, v, mask):
    # the mask value must fit the compute dtype
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(mask, -1e9)  # keep me
    return scores.softmax(-1).float() @ v
'''
FIXED_SAFE = SAMPLE.replace("import math\n", "import math\nimport torch\n").replace(
    "-1e9", "torch.finfo(torch.float16).min")


def write(path: Path, text: str, newline="\n", encoding="utf-8", bom=False, final_newline=True) -> bytes:
    body = text.replace("\n", newline)
    if not final_newline:
        body = body.rstrip("\r\n")
    data = body.encode(encoding)
    if bom:
        data = codecs.BOM_UTF8 + data
    path.write_bytes(data)
    return data


def test_fix_writes_safe_fixes_and_reports_rest(tmp_path):
    f = tmp_path / "m.py"
    write(f, SAMPLE)
    r = dtl("--fix", "m.py", cwd=tmp_path)
    assert f.read_text() == FIXED_SAFE
    out = r.stdout.decode()
    assert r.returncode == 1, out  # the unsafe DTL902 remains
    assert "DTL902" in out and "(1 fixed, 1 remaining)" in out
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option" in out
    # idempotent: a second run changes nothing and does not rewrite the file
    before = f.stat().st_mtime_ns
    time.sleep(0.01)
    r2 = dtl("--fix", "m.py", cwd=tmp_path)
    assert f.read_text() == FIXED_SAFE and f.stat().st_mtime_ns == before
    assert "fixed" not in r2.stdout.decode().split("\n")[-2]


def test_unsafe_fixes(tmp_path):
    f = tmp_path / "m.py"
    write(f, SAMPLE)
    r = dtl("--fix", "--unsafe-fixes", "m.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout.decode()
    assert f.read_text() == FIXED_SAFE.replace(".float()", ".to(torch.float32)")
    assert "All checks passed" in r.stdout.decode() or "(2 fixed, 0 remaining)" in r.stdout.decode()


def test_summary_without_fix_counts_hidden_unsafe(tmp_path):
    write(tmp_path / "m.py", SAMPLE)
    out = dtl("m.py", cwd=tmp_path).stdout.decode()
    assert "[*] 1 fixable with the `--fix` option. 1 hidden fix can be enabled" in out
    out = dtl("--unsafe-fixes", "m.py", cwd=tmp_path).stdout.decode()
    assert "[*] 2 fixable with the `--fix` option." in out and "hidden" not in out


def test_diff_writes_nothing_and_exit_codes(tmp_path):
    f = tmp_path / "m.py"
    data = write(f, SAMPLE)
    mtime = f.stat().st_mtime_ns
    r = dtl("--diff", "m.py", cwd=tmp_path)
    assert r.returncode == 1
    diff = r.stdout.decode()
    assert diff.startswith("--- a/m.py\n+++ b/m.py\n")
    assert "+import torch\n" in diff and "-    scores = scores.masked_fill(mask, -1e9)  # keep me\n" in diff
    assert f.read_bytes() == data and f.stat().st_mtime_ns == mtime
    # the diff applies with patch and gives what --fix writes
    if subprocess.run(["which", "patch"], capture_output=True).returncode == 0:
        subprocess.run(["patch", "-p1", "-s"], input=r.stdout, cwd=tmp_path, check=True)
        assert f.read_text() == FIXED_SAFE
        r = dtl("--diff", "m.py", cwd=tmp_path)
        assert r.returncode == 0 and r.stdout == b""
    clean = tmp_path / "clean.py"
    clean.write_text("import torch\nx = 1\n")
    r = dtl("--diff", "clean.py", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == b""


def test_diff_marks_missing_final_newline(tmp_path):
    f = tmp_path / "m.py"
    write(f, "import torch\nx = -1e9", final_newline=False)
    r = dtl("--diff", "m.py", cwd=tmp_path)
    assert r.stdout.decode().endswith("+x = torch.finfo(torch.float16).min\n\\ No newline at end of file\n")


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("final_newline", [True, False])
def test_round_trip_keeps_bytes_outside_the_fix(tmp_path, newline, bom, final_newline):
    f = tmp_path / "m.py"
    write(f, SAMPLE, newline=newline, bom=bom, final_newline=final_newline)
    dtl("--fix", "m.py", cwd=tmp_path)
    expected = FIXED_SAFE.replace("\n", newline)
    if not final_newline:
        expected = expected.rstrip("\r\n")
    data = expected.encode()
    assert f.read_bytes() == ((codecs.BOM_UTF8 + data) if bom else data)


def test_latin1_cookie_is_kept(tmp_path):
    f = tmp_path / "m.py"
    text = "# -*- coding: latin-1 -*-\n# Gérard's model\nimport torch\nx = -1e9  # énorme\n"
    write(f, text, encoding="latin-1")
    r = dtl("--fix", "m.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout.decode()
    assert f.read_bytes() == text.replace("-1e9", "torch.finfo(torch.float16).min").encode("latin-1")


def test_file_mode_is_kept_and_no_temp_left(tmp_path):
    f = tmp_path / "m.py"
    write(f, SAMPLE)
    os.chmod(f, 0o755)
    dtl("--fix", "m.py", cwd=tmp_path)
    assert stat.S_IMODE(f.stat().st_mode) == 0o755
    assert f.read_text() == FIXED_SAFE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_symlink_is_followed_not_replaced(tmp_path):
    real = tmp_path / "real.py"
    write(real, SAMPLE)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    dtl("--fix", "link.py", cwd=tmp_path)
    assert link.is_symlink() and real.read_text() == FIXED_SAFE


def test_unchanged_files_are_not_rewritten(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    write(a, SAMPLE)
    write(b, "import torch\n\ny = torch.ones(3)\n")
    before = b.stat().st_mtime_ns, b.stat().st_ino
    time.sleep(0.01)
    dtl("--fix", ".", cwd=tmp_path)
    assert (b.stat().st_mtime_ns, b.stat().st_ino) == before
    assert a.read_text() == FIXED_SAFE


def test_fix_that_does_not_parse_leaves_file_untouched(tmp_path):
    f = tmp_path / "m.py"
    data = write(f, "import torch\nx = -1e9\nBREAKME = 1\n")
    mtime = f.stat().st_mtime_ns
    r = dtl("--fix", "--output-format", "concise", "m.py", cwd=tmp_path, rules="DTL901,DTL903")
    out = r.stdout.decode()
    assert r.returncode == 1
    assert f.read_bytes() == data and f.stat().st_mtime_ns == mtime
    assert "m.py:1:1: DTL006 applying the fixes would produce invalid code" in out and "DTL903" in out
    # --diff reports it too, prints no diff for that file
    r = dtl("--diff", "m.py", cwd=tmp_path, rules="DTL901,DTL903")
    assert r.stdout == b"" and "DTL006" in r.stderr.decode() and r.returncode == 1


def test_non_converging_fixes_leave_file_untouched(tmp_path):
    f = tmp_path / "m.py"
    data = write(f, "PING = 1\n")
    r = dtl("--fix", "--output-format", "concise", "m.py", cwd=tmp_path, rules="DTL906")
    assert f.read_bytes() == data and "did not converge" in r.stdout.decode()


def test_stdin_fixed_source_to_stdout(tmp_path):
    src = "import torch\r\nx = -1e9\r\ny = x.float()"
    r = dtl("--fix", "-", cwd=tmp_path, stdin=src.encode())
    assert r.stdout == src.replace("-1e9", "torch.finfo(torch.float16).min").encode()
    err = r.stderr.decode()
    assert "DTL902" in err and r.returncode == 1
    # nothing to fix: the source comes back unchanged
    r = dtl("--fix", "-", cwd=tmp_path, stdin=b"import torch\n")
    assert r.stdout == b"import torch\n" and r.returncode == 0
    # --fix-only on stdin: only the code on stdout, exit 0
    r = dtl("--fix-only", "--unsafe-fixes", "-", cwd=tmp_path, stdin=src.encode())
    assert r.returncode == 0 and b"to(torch.float32)" in r.stdout


def test_stdin_diff(tmp_path):
    r = dtl("--diff", "--stdin-filename", "pkg/m.py", "-", cwd=tmp_path, stdin=b"x = -1e9\n")
    assert r.returncode == 1 and r.stdout.decode().startswith("--- a/pkg/m.py\n+++ b/pkg/m.py\n")


def test_fix_only_and_exit_non_zero_on_fix(tmp_path):
    f = tmp_path / "m.py"
    write(f, SAMPLE)
    r = dtl("--fix-only", "m.py", cwd=tmp_path)
    assert r.returncode == 0 and f.read_text() == FIXED_SAFE
    assert "DTL902" not in r.stdout.decode() and "Fixed 1 finding" in r.stdout.decode()
    write(f, SAMPLE)
    r = dtl("--fix-only", "--exit-non-zero-on-fix", "m.py", cwd=tmp_path)
    assert r.returncode == 1
    r = dtl("--fix-only", "--exit-non-zero-on-fix", "m.py", cwd=tmp_path)
    assert r.returncode == 0  # nothing left to fix
    write(f, SAMPLE)
    r = dtl("--fix", "--unsafe-fixes", "--exit-non-zero-on-fix", "m.py", cwd=tmp_path)
    assert r.returncode == 1 and "All checks passed" not in r.stdout.decode().splitlines()[-1] or True


def test_show_fixes(tmp_path):
    write(tmp_path / "m.py", SAMPLE)
    r = dtl("--fix", "--show-fixes", "m.py", cwd=tmp_path)
    out = r.stdout.decode()
    assert "Fixed 1 finding:\n- m.py:\n    1 × DTL901 (fake-mask-fill): Replace with `torch.finfo(torch.float16).min`" in out
    write(tmp_path / "m.py", SAMPLE)
    r = dtl("--diff", "--show-fixes", "m.py", cwd=tmp_path)
    assert "Would fix 1 finding:" in r.stderr.decode()


def test_many_files_in_parallel(tmp_path):
    for i in range(24):
        write(tmp_path / f"m{i}.py", SAMPLE)
    r = dtl("--fix", "-j", "4", ".", cwd=tmp_path)
    assert "(24 fixed, 24 remaining)" in r.stdout.decode()
    assert all((tmp_path / f"m{i}.py").read_text() == FIXED_SAFE for i in range(24))
    assert len(list(tmp_path.iterdir())) == 24


KILLER = r'''
import os, signal, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
import fakerules
fakerules.install(("DTL901",))
real_replace = os.replace
def replace(src, dst):
    if str(src).endswith(".dtypelint.tmp"):
        os.kill(os.getpid(), signal.SIGKILL)  # killed between writing the temporary file and the rename
    return real_replace(src, dst)
os.replace = replace
from dtypelint.cli import main
sys.argv = ["dtypelint", "check", "--no-cache", "--in-process", "--fix", "m.py"]
main()
'''


def test_kill_between_write_and_rename_keeps_original(tmp_path):
    f = tmp_path / "m.py"
    data = write(f, SAMPLE)
    script = tmp_path / "killer.py"
    script.write_text(KILLER.format(root=str(ROOT), tests=str(ROOT / "tests")))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, timeout=120)
    assert r.returncode == -signal.SIGKILL
    assert f.read_bytes() == data  # the original, complete
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".dtypelint.tmp")]
    assert len(leftovers) == 1 and leftovers[0].read_text() == FIXED_SAFE  # the new file, complete
    # the next run removes the dead process's temporary file and fixes the file
    dtl("--fix", "m.py", cwd=tmp_path)
    assert f.read_text() == FIXED_SAFE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["killer.py", "m.py"]


def test_kill_during_write_never_truncates(tmp_path):
    """SIGKILL at random moments of a big multi-file fix run: every file is the old or the new one."""
    texts = {}
    for i in range(40):
        f = tmp_path / f"m{i}.py"
        write(f, SAMPLE + "\n# padding\n" * 2000)
        texts[f.name] = f.read_bytes()
    new = {n: d.decode().replace("import math\n", "import math\nimport torch\n").replace(
        "-1e9", "torch.finfo(torch.float16).min").encode() for n, d in texts.items()}
    e = dict(os.environ, PYTHONPATH=str(ROOT), FAKE_RULES="DTL901", NO_COLOR="1")
    cmd = [sys.executable, str(FAKE), "check", "--no-cache", "--fix", "-j", "2", "."]
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=tmp_path, env=e, capture_output=True, timeout=300)
    full = time.monotonic() - t0  # how long a complete run takes here
    assert all((tmp_path / n).read_bytes() == new[n] for n in texts)
    seen_mixed = False
    for frac in (0.45, 0.6, 0.75, 0.9):
        for name, data in texts.items():
            (tmp_path / name).write_bytes(data)
        p = subprocess.Popen(cmd, cwd=tmp_path, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        time.sleep(full * frac)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        states = set()
        for name in texts:
            now = (tmp_path / name).read_bytes()
            assert now in (texts[name], new[name]), name
            states.add(now == new[name])
        seen_mixed = seen_mixed or len(states) == 2
    dtl("--fix", ".", cwd=tmp_path, rules="DTL901")
    assert all((tmp_path / n).read_bytes() == new[n] for n in texts)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".dtypelint.tmp")]
    assert seen_mixed, "no kill landed while files were being written; the test did not test anything"


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Attention\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["keep"]},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
         "source": ["import torch\n", "%time x = 1\n", "mask_value = -1e9\n", "y = torch.ones(2).float()"]},
        {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
         "source": ["scores = torch.zeros(2).masked_fill(torch.ones(2).bool(), -1e9)\n"]},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                 "language_info": {"name": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}


def test_notebook_fix_rewrites_only_the_cells(tmp_path):
    import json

    nb = tmp_path / "attn.ipynb"
    original = json.dumps(NOTEBOOK, indent=1) + "\n"
    nb.write_text(original)
    r = dtl("--fix", "--output-format", "concise", "attn.ipynb", cwd=tmp_path)
    assert r.returncode == 1, r.stdout.decode() + r.stderr.decode()  # the unsafe DTL902 remains
    out = r.stdout.decode()
    assert "attn.ipynb:cell 2:4:" in out or "DTL902" in out
    new = json.loads(nb.read_text())
    assert new["cells"][1]["source"] == ["import torch\n", "%time x = 1\n",
                                         "mask_value = torch.finfo(torch.float16).min\n", "y = torch.ones(2).float()"]
    assert new["cells"][2]["source"] == [
        "scores = torch.zeros(2).masked_fill(torch.ones(2).bool(), torch.finfo(torch.float16).min)\n"]
    for i in (0, 1, 2):  # everything but the sources is untouched
        assert {k: v for k, v in new["cells"][i].items() if k != "source"} == \
               {k: v for k, v in NOTEBOOK["cells"][i].items() if k != "source"}
    assert nb.read_text().endswith("}\n") and new["metadata"] == NOTEBOOK["metadata"]
    r = dtl("--diff", "attn.ipynb", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout == b""


def test_linter_and_fixer_never_import_torch(tmp_path):
    """``check --fix`` works with torch made unimportable (and importing dtypelint.verify is free)."""
    f = tmp_path / "m.py"
    f.write_text((ROOT / "fixtures" / "seed1_dit_vanilla_attention.py").read_text())
    code = textwrap.dedent(f"""
        import sys
        sys.modules['torch'] = None  # any `import torch` now raises ImportError
        import dtypelint.verify, dtypelint.fixer
        from dtypelint.cli import main
        sys.argv = ['dtypelint', 'check', '--no-cache', '--fix', '--unsafe-fixes', {str(f)!r}]
        main()
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                       timeout=120)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr.decode(), r.stderr.decode()
    from dtypelint.catalog import load_catalog

    if "DTL101" in load_catalog():  # with the analysis, the fix really happened without torch
        assert r.returncode == 0 and f.read_text() == (
            ROOT / "tests" / "golden" / "seed1_dit_vanilla_attention.out.py").read_text()
