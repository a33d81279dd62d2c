"""The abstract interpreter: one file's functions, per regime and path, emitting sink events."""

from dtypelint.analysis.interp.file import FileAnalysis
from dtypelint.analysis.interp.frame import Frame

__all__ = ["FileAnalysis", "Frame"]
