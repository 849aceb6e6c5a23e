"""Opening telemetry files so that nothing blocks and nothing is read without bound.

A path is opened with O_NONBLOCK (a FIFO without a writer would otherwise block `open` forever)
and checked with fstat on the open descriptor, so the file checked is the file read: only
regular files are accepted (not FIFOs, `/dev/zero`, sockets or directories), and a file over its
kind's cap is refused before a byte is read. Reads stop one byte past the cap, so a file that
grows after the check is still refused. The caps are in README.md ("size caps").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from model.telemetry.errors import TelemetryError

MiB = 2**20

MAX_TABLE_BYTES = 256 * MiB
"""CSV/TSV/Parquet tables: read whole; polars needs ~3-5x the file size while parsing."""

MAX_JSON_TABLE_BYTES = 64 * MiB
"""JSON-array tables, and NDJSON that polars cannot read (it then goes line by line through
Python's json): ~10-20x the file size in memory."""

MAX_TRACE_BYTES = 1024 * MiB
"""Chrome traces, bytes on disk and, for .json.gz, bytes after decompression: streamed, so memory
grows with the kernels kept, not the file (a 250 MB trace peaks under 1.5 GB, BENCHMARKS.md)."""

MAX_SQLITE_BYTES = 2048 * MiB
"""Nsight Systems SQLite exports: sqlite pages in what a query touches, not the whole file."""

MAX_SQLITE_KERNELS = 5_000_000
"""Kernel rows read from one Nsight Systems export (each becomes one Python row)."""

READ_CHUNK = MiB
"""Bytes per read when streaming."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def too_big(name: str, what: str, limit: int) -> TelemetryError:
    """The one-line error for a file over its cap."""
    cap = f"{limit // MiB} MiB" if limit % MiB == 0 else f"{limit:,}-byte"
    return TelemetryError(name, f"{what} is over the {cap} cap for this kind of file")


@contextmanager
def open_regular(path: str | Path, max_bytes: int, what: str = "file") -> Iterator[BinaryIO]:
    """Open `path` for binary reading after checking, on the open descriptor, that it is a
    regular file of at most `max_bytes` bytes. `what` names the file's kind in errors.

    Raises:
        TelemetryError: cannot be opened, is not a regular file, or is over the cap.
    """
    name = str(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise TelemetryError(name, f"cannot open: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TelemetryError(
                name, f"is {_kind(info.st_mode)}; telemetry must be a regular file"
            )
        if info.st_size > max_bytes:
            raise too_big(name, what, max_bytes)
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def read_regular(path: str | Path, max_bytes: int, what: str = "file") -> bytes:
    """The whole of a regular file of at most `max_bytes` bytes (see `open_regular`)."""
    name = str(path)
    with open_regular(name, max_bytes, what) as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise TelemetryError(name, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise too_big(name, what, max_bytes)
    return data


def read_head(path: str | Path, size: int) -> bytes:
    """The first `size` bytes of a regular file (any size), to tell what it holds."""
    name = str(path)
    with open_regular(name, 2**63 - 1) as handle:
        try:
            return handle.read(size)
        except OSError as exc:
            raise TelemetryError(name, f"cannot read: {exc.strerror or exc}") from None


__all__ = [
    "MAX_JSON_TABLE_BYTES",
    "MAX_SQLITE_BYTES",
    "MAX_SQLITE_KERNELS",
    "MAX_TABLE_BYTES",
    "MAX_TRACE_BYTES",
    "READ_CHUNK",
    "open_regular",
    "read_head",
    "read_regular",
    "too_big",
]
