"""Arrival-trace files: one arrival time in milliseconds per line, non-decreasing.

Blank lines and `#` comments are ignored. The times are replayed as the request arrivals.
"""

from __future__ import annotations

import io
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import PacketError, Problem, UsageError
from .files import TRACE, FileRefused, FileTooLarge, read_regular

if TYPE_CHECKING:
    import numpy as np


def read_trace(path: Path, label: str | None = None) -> np.ndarray:
    """Arrival times (ms, float64, non-decreasing, shifted so the first is 0) from `path`.

    Raises UsageError when the file cannot be read (missing, not a regular file, over the
    `files.TRACE` cap) and PacketError naming the line of the first bad value otherwise. Errors
    never quote the file's text (a trace path may name any file, /etc/passwd included).
    """
    import numpy as np  # here, not at the top: a packet without a trace never loads numpy

    name = label or str(path)
    try:
        raw = read_regular(path, TRACE, name)
    except FileTooLarge as exc:
        raise UsageError(str(exc)) from None
    except FileRefused as exc:
        raise UsageError(f"{name}: cannot read arrival trace: {exc.reason}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PacketError([Problem(name, line, (), "not UTF-8 text")]) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy warns on empty input; we explain it below
            arr = np.loadtxt(io.StringIO(text), comments="#", dtype=np.float64, ndmin=1)
        ok = bool(np.all(np.isfinite(arr)) and np.all(arr >= 0) and np.all(np.diff(arr) >= 0))
    except ValueError:
        ok = False
    if not ok:
        raise PacketError([_first_bad_line(name, text)])
    if len(arr) < 2:
        raise PacketError([Problem(name, 1, (), "a trace needs at least two arrival times")])
    return arr - arr[0]


def _first_bad_line(name: str, text: str) -> Problem:
    """The first offending line (a line-by-line pass, run only to explain a rejected file)."""
    previous = -math.inf
    for number, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        try:
            value = float(body)
        except ValueError:
            return Problem(
                name, number, (), f"expected an arrival time in ms, got text ({len(body)} chars)"
            )
        if not math.isfinite(value) or value < 0:
            return Problem(name, number, (), f"arrival time must be finite and >= 0, got {value}")
        if value < previous:
            return Problem(
                name, number, (), f"arrival times must not decrease ({value} < {previous})"
            )
        previous = value
    return Problem(name, 1, (), "not a list of arrival times, one per line")
