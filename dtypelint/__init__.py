"""dtypelint: find mixed-precision dtype hazards in PyTorch model code, and fix them."""

__version__ = "0.1.0"
