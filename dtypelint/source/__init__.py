"""The source layer: a file's bytes in, the Python code the analysis reads out, and back.

A ``.py`` file is its own code (:mod:`dtypelint.source.python`).  A Jupyter notebook
becomes the code of its cells with a map from rows to cells
(:mod:`dtypelint.source.notebook`).  Both are seen through :class:`SourceView`, so
the engine analyses any format the same way and never knows notebooks: it
analyses ``view.code``, reports ``view.to_file(d)``, and a fix step writes a fixed
code back into the file's format with ``view.encode``.
"""

from __future__ import annotations

from dtypelint.diagnostics import Diagnostic
from dtypelint.source.python import SourceError, SourceFile, newline_of

__all__ = ["PythonView", "SourceError", "SourceFile", "SourceView", "load_source", "newline_of"]


class SourceView:
    """One file as Python code: what is analysed and how positions map back to the file."""

    code: SourceFile

    def to_file(self, d: Diagnostic) -> Diagnostic:
        """A finding on :attr:`code`, placed the way it is reported for the file."""
        return d

    def to_code(self, d: Diagnostic) -> Diagnostic:
        """The inverse of :meth:`to_file` (the fixer edits :attr:`code`)."""
        return d

    def encode(self, fixed: str) -> tuple[bytes, "SourceView"]:
        """The file's new bytes for a fixed copy of :attr:`code`, and the view of them.

        Raises :class:`SourceError` (kind ``"encode"``) when the fixed code cannot be written back."""
        raise NotImplementedError

    def display(self, text: str) -> str:
        """How :attr:`code` (or a fixed copy of it) is shown in a diff."""
        return text


class PythonView(SourceView):
    """A ``.py`` file: the code is the file."""

    def __init__(self, code: SourceFile):
        self.code = code

    def encode(self, fixed: str) -> tuple[bytes, SourceView]:
        try:
            data = self.code.to_bytes(fixed)
        except UnicodeEncodeError as exc:
            raise SourceError("encode", f"the fixed source cannot be encoded as {self.code.encoding}: {exc.reason}")
        return data, PythonView(SourceFile(fixed, self.code.encoding, self.code.bom, self.code.newline))


def load_source(data: bytes, suffix: str) -> SourceView:
    """The view of a file's bytes; ``suffix`` (``.py``, ``.ipynb``) picks the format.

    Raises :class:`SourceError` when the bytes are not readable source of that format."""
    if suffix == ".ipynb":
        from dtypelint.source.notebook import NotebookView

        return NotebookView.from_bytes(data)
    return PythonView(SourceFile.from_bytes(data))
