"""What a run records about the user's own code: lines executed, the user frames at each
sink, and silent promotions at the flagged statement.

A finding is reproduced only when the failure traces to the flagged statement (or its
dataflow path), so every sink event, exception and promotion is tied to the user's
source lines.  Only the files being verified are traced; torch internals are skipped.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch.overrides import TorchFunctionMode

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
LOW = (torch.float16, torch.bfloat16)


@lru_cache(maxsize=None)
def realpath(filename: str) -> str | None:
    """Normalised path of a code filename (None for ``<string>`` and the like); cached for the process."""
    return os.path.realpath(filename) if filename and not filename.startswith("<") else None


class Watch:
    """The files whose lines matter (originals and fixed copies), by normalised path."""

    def __init__(self, files=()):
        self.files = {realpath(f) for f in files}
        self._seen: dict[str, str | None] = {}

    def key(self, filename: str) -> str | None:
        """The normalised path of a watched code filename, else None (cached per string)."""
        hit = self._seen.get(filename, 0)
        if hit != 0:
            return hit
        real = realpath(filename)
        value = real if real in self.files else None
        self._seen[filename] = value
        return value

    def stack(self, frame=None, limit: int = 64) -> tuple[tuple, ...]:
        """Watched (file, line, column, end column) of the frames on the current Python stack, innermost first."""
        out = []
        f = frame or sys._getframe(1)
        while f is not None and limit:
            k = self.key(f.f_code.co_filename)
            if k is not None:
                out.append((k, f.f_lineno, *_columns(f.f_code, f.f_lasti)))
            f = f.f_back
            limit -= 1
        return tuple(out)

    def traceback_frames(self, tb) -> tuple[tuple, ...]:
        """Watched (file, line, column, end column) of a traceback's frames, innermost first."""
        out = []
        while tb is not None:
            k = self.key(tb.tb_frame.f_code.co_filename)
            if k is not None:
                out.append((k, tb.tb_lineno, *_columns(tb.tb_frame.f_code, tb.tb_lasti)))
            tb = tb.tb_next
        return tuple(reversed(out))


def _columns(code, lasti: int) -> tuple[int, int]:
    """0-based (column, end column) of the instruction being run (Python 3.11+), else (-1, -1)."""
    positions = getattr(code, "co_positions", None)
    if positions is None or lasti < 0:
        return (-1, -1)
    try:
        for i, pos in enumerate(positions()):
            if i == lasti // 2:
                col, end = pos[2], pos[3]
                return (col if col is not None else -1, end if end is not None else -1)
    except Exception:
        pass
    return (-1, -1)


class LineTracer:
    """Record the lines executed in watched files (``sys.settrace``, restored afterwards)."""

    def __init__(self, watch: Watch):
        self.watch = watch
        self.hits: dict[str, set[int]] = {}
        self._previous = None

    def _global(self, frame, event, arg):
        k = self.watch.key(frame.f_code.co_filename)
        if k is None:
            return None
        lines = self.hits.setdefault(k, set())
        lines.add(frame.f_lineno)

        def local(frame, event, arg):
            if event == "line":
                lines.add(frame.f_lineno)
            return local

        return local

    def __enter__(self):
        self._previous = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._previous)
        return False


@dataclass(frozen=True)
class Promotion:
    """A call at a probed line whose floating inputs mixed a low-precision tensor with a float32
    tensor (dim >= 1) and returned float32: the silent widening DTL104 describes."""

    op: str
    inputs: tuple[str, ...]
    output: str
    where: tuple[str, int]

    def describe(self) -> str:
        return f"`{self.op}` turned {' + '.join(self.inputs)} into {self.output}"


def _first_user_frame(watch: Watch):
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith(_TORCH_DIR) or name.startswith(_HERE)):
            return f
        f = f.f_back
    return None


class PromotionProbe(TorchFunctionMode):
    """Record promotions made by calls written on the probed lines."""

    def __init__(self, watch: Watch, lines: dict[str, set[int]]):
        super().__init__()
        self.watch = watch
        self.lines = {os.path.realpath(k): v for k, v in lines.items()}
        self.events: list[Promotion] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        try:
            self._record(func, args, kwargs, out)
        except Exception:  # never disturb the user's code
            pass
        return out

    def _record(self, func, args, kwargs, out) -> None:
        if not isinstance(out, torch.Tensor) or out.dtype != torch.float32:
            return
        frame = _first_user_frame(self.watch)
        if frame is None:
            return
        k = self.watch.key(frame.f_code.co_filename)
        if k is None or frame.f_lineno not in self.lines.get(k, ()):
            return
        flat = [b for a in (*args, *kwargs.values()) for b in (a if isinstance(a, (list, tuple)) else (a,))]
        tensors = [a for a in flat if isinstance(a, torch.Tensor) and a.is_floating_point()]  # cat([lp, fp32])
        low = [t for t in tensors if t.dtype in LOW]
        wide = [t for t in tensors if t.dtype == torch.float32 and t.dim() >= 1]
        if low and wide:
            name = getattr(func, "__name__", str(func))
            self.events.append(Promotion(name, tuple(str(t.dtype).replace("torch.", "") for t in tensors),
                                         "float32", (k, frame.f_lineno)))
