"""The CUDA code path without a GPU: device selection, real autocast, real flash-attn when usable.

This machine has no GPU.  ``torch.cuda.is_available`` is mocked for device selection, and the
real-device run path (model moved to the device, ``torch.autocast`` on it, contract mode only
recording, stand-ins only where the real package is missing) runs with "cuda" mapped to CPU
tensors (``harness.DEVICE_ALIAS``): the same code, on the kernels this machine has.
"""

from __future__ import annotations

import sys
import types
from unittest import mock

import pytest

torch = pytest.importorskip("torch")

from dtypelint.verify import harness  # noqa: E402
from dtypelint.verify.command import VerifyUsageError, resolve_device  # noqa: E402
from dtypelint.verify.harness import HarnessSpec, RunSetup, run_regime  # noqa: E402
from dtypelint.verify.runner import _context  # noqa: E402
from dtypelint.verify.stubs import real_package_usable, stubs_installed  # noqa: E402


@pytest.mark.parametrize("available, requested, expected", [
    (True, "auto", "cuda"), (False, "auto", "cpu"), (True, "cpu", "cpu"), (True, "cuda", "cuda")])
def test_device_selection(available, requested, expected):
    with mock.patch("torch.cuda.is_available", return_value=available):
        assert resolve_device(requested) == expected


def test_cuda_requested_without_one_is_a_usage_error():
    with mock.patch("torch.cuda.is_available", return_value=False), pytest.raises(VerifyUsageError):
        resolve_device("cuda")


def test_cuda_children_are_spawned_not_forked():
    assert _context("cuda").get_start_method() == "spawn"
    assert _context("cpu").get_start_method() in ("fork", "spawn")


MODEL = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.proj(x) @ self.proj.weight.float()
'''


@pytest.fixture
def cuda_as_cpu(monkeypatch):
    monkeypatch.setitem(harness.DEVICE_ALIAS, "cuda", "cpu")


def test_on_a_cuda_device_autocast_is_real_and_kernels_raise_themselves(tmp_path, cuda_as_cpu):
    (tmp_path / "cuda_model.py").write_text(MODEL)
    spec = HarnessSpec("Block", dict(d=8), lambda t: (t.randn(2, 8),))
    setup = RunSetup(device="cuda")
    auto = run_regime(tmp_path, "cuda_model", spec, "autocast", setup=setup)
    assert auto.device == "cuda"  # not fake-cuda: real autocast on the device
    assert auto.ok and auto.output_dtype == "torch.float16"  # autocast casts both matmul operands
    half = run_regime(tmp_path, "cuda_model", spec, "half", setup=setup)
    assert half.device == "cuda" and not half.ok and half.dtype_error and "same dtype" in half.error


def test_a_real_flash_attn_is_kept_on_cuda_only(monkeypatch):
    real = types.ModuleType("flash_attn")
    real.flash_attn_func = lambda q, k, v, **kw: q
    monkeypatch.setitem(sys.modules, "flash_attn", real)
    assert real_package_usable("flash_attn", "cuda") is True
    assert real_package_usable("flash_attn", "cpu") is False
    with stubs_installed(device="cuda"):
        assert sys.modules["flash_attn"] is real
    with stubs_installed(device="fake-cuda"):
        assert getattr(sys.modules["flash_attn"], "__dtypelint_stub__", False)
    assert sys.modules["flash_attn"] is real
