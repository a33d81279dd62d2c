"""Helper module of the regression package (a norm factory the analysis cannot see through)."""
import torch.nn as nn


def make_norm(channels):
    registry = {"group": nn.GroupNorm}
    return registry["group"](32, channels)


def maybe_autocast(device_type, enabled=True, dtype=None):
    import torch

    return torch.autocast(device_type=device_type, enabled=enabled, dtype=dtype)
