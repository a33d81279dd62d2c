"""Moved to :mod:`dtypelint.source.notebook` (a notebook is a source format); kept for old imports."""

from dtypelint.source.notebook import *  # noqa: F401,F403
from dtypelint.source.notebook import __all__  # noqa: F401
