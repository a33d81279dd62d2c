"""Reading a source file the way Python does: PEP 263 cookies, UTF-8 BOM, line endings.

The decoded text and the facts needed to write it back unchanged (encoding, BOM,
newline style, final newline) travel together so the fixer can round-trip a file.
"""

from __future__ import annotations

import codecs
import io
import tokenize
from bisect import bisect_right
from dataclasses import dataclass, field


class SourceError(Exception):
    """The file cannot be decoded as Python source; ``kind`` picks the DTL0xx code."""

    def __init__(self, kind: str, message: str, row: int = 1):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.row = row


def newline_of(text: str) -> str:
    """The text's line-ending style: CRLF, CR or LF."""
    return "\r\n" if "\r\n" in text else ("\r" if "\r" in text and "\n" not in text else "\n")


@dataclass
class SourceFile:
    """Decoded text of one file plus how to encode it back."""

    text: str
    encoding: str = "utf-8"
    bom: bool = False
    newline: str = "\n"
    _line_starts: list[int] = field(default_factory=list, repr=False)

    @classmethod
    def from_bytes(cls, data: bytes) -> "SourceFile":
        if b"\x00" in data:
            raise SourceError("binary", "file contains NUL bytes (binary file?)")
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as exc:
            if "invalid or missing" not in str(exc.msg):
                raise SourceError("decode", f"bad encoding declaration: {exc.msg}") from exc
            encoding = "utf-8"  # no cookie and undecodable first lines: the decode below says where
        bom = data.startswith(codecs.BOM_UTF8)
        payload = data[len(codecs.BOM_UTF8) :] if bom else data
        codec = "utf-8" if encoding == "utf-8-sig" else encoding
        try:
            text = payload.decode(codec)
        except UnicodeDecodeError as exc:
            row = payload[: exc.start].count(b"\n") + 1
            bad = payload[exc.start : exc.start + 1].hex()
            raise SourceError("decode", f"cannot decode line {row} as {codec}: invalid byte 0x{bad} "
                              "(declare the file's encoding with a coding cookie, or save it as UTF-8)", row) from exc
        except LookupError as exc:
            raise SourceError("decode", f"unknown encoding {codec!r} in the coding cookie") from exc
        return cls(text=text, encoding=codec, bom=bom, newline=newline_of(text))

    @classmethod
    def from_text(cls, text: str) -> "SourceFile":
        """An in-memory text (editor buffer, stdin already decoded), written back as UTF-8."""
        return cls(text=text, newline=newline_of(text))

    def to_bytes(self, text: str | None = None) -> bytes:
        """Encode ``text`` (default: this file's text) with this file's encoding and BOM."""
        body = (self.text if text is None else text).encode(self.encoding)
        return (codecs.BOM_UTF8 + body) if self.bom else body

    # -- positions ---------------------------------------------------------------
    @property
    def line_starts(self) -> list[int]:
        if not self._line_starts:
            starts = [0]
            text = self.text
            i = 0
            n = len(text)
            while i < n:
                c = text[i]
                if c == "\n" or (c == "\r" and (i + 1 >= n or text[i + 1] != "\n")):
                    starts.append(i + 1)
                i += 1
            self._line_starts = starts
        return self._line_starts

    def lines(self) -> list[str]:
        return self.text.splitlines()

    def offset(self, row: int, column: int) -> int:
        """Character offset of a 1-based (row, column)."""
        starts = self.line_starts
        row = max(1, min(row, len(starts)))
        return min(starts[row - 1] + column - 1, len(self.text))

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (row, column) of a character offset."""
        row = bisect_right(self.line_starts, offset)
        return row, offset - self.line_starts[row - 1] + 1

    def line(self, row: int) -> str:
        lines = self.text.splitlines()
        return lines[row - 1] if 0 < row <= len(lines) else ""
