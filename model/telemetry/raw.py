"""The untyped form every tabular telemetry file is read into, and helpers its readers share.

`RawTable` holds one file's rows before typing (values as the file holds them) with each row's
1-based line; `line_bounds`/`nonblank_lines` find lines in raw bytes with numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from model.telemetry.columns import normalize_column_name
from model.telemetry.errors import TelemetryError

WHITESPACE = np.array([9, 10, 11, 12, 13, 32], dtype=np.uint8)
"""Bytes that count as blank: tab, newline, vertical tab, form feed, carriage return, space."""


@dataclass(frozen=True, eq=False)
class RawTable:
    """One file's data rows before typing.

    Attributes:
        path: the file as given.
        format: "csv", "ndjson", "json-array" or "parquet" (what the content is).
        frame: one column per header name, normalized (`normalize_column_name`); CSV columns are
            strings, NDJSON/Parquet columns keep their JSON/Parquet types.
        original_names: normalized name -> the name as written in the file.
        line: (rows,) int64, 1-based line of each row's start in the file, 0 when unknown.
        malformed: (rows,) bool, True where the row is not a well-formed record (CSV: a different
            number of fields than the header; NDJSON: not a JSON object).
        malformed_notes: data row -> what is wrong with it, for the first malformed rows.
        warnings: one-line notes about the file (wrong extension, blank lines skipped, ...).
    """

    path: str
    format: str
    frame: pl.DataFrame
    original_names: dict[str, str]
    line: np.ndarray
    malformed: np.ndarray
    malformed_notes: dict[int, str]
    warnings: tuple[str, ...]

    @property
    def columns_found(self) -> str:
        """The file's column names as written, comma-separated, for error messages."""
        return ", ".join(self.original_names.values()) or "(none)"


def check_text(name: str, data: bytes) -> None:
    """Raise `TelemetryError` (with the line) when `data` holds a NUL byte or is not UTF-8."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise TelemetryError(name, f"NUL byte at offset {nul}: binary data, not text", line=line)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start]
        raise TelemetryError(
            name, f"not UTF-8 text (byte 0x{byte:02x} at offset {exc.start})", line=line
        ) from None


def unique_names(name: str, written: list[str]) -> dict[str, str]:
    """Normalized -> written names; duplicate names after normalization are an error."""
    names: dict[str, str] = {}
    for i, original in enumerate(written):
        norm = normalize_column_name(original) or f"column_{i + 1}"
        if norm in names:
            raise TelemetryError(
                name, f"duplicate column name (also {names[norm]!r})", line=1, column=original
            )
        names[norm] = original
    return names


def line_bounds(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of every line (end excludes the newline), last line included only
    if it holds bytes."""
    newlines = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(buf)]))
    if starts[-1] == len(buf):
        starts, ends = starts[:-1], ends[:-1]
    return starts, ends


def nonblank_lines(
    data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> np.ndarray:
    """(lines,) bool: True where the line holds a byte other than whitespace."""
    nonblank = np.ones(len(starts), bool)
    first = np.full(len(starts), 32, np.uint8)
    first[starts < ends] = buf[starts[starts < ends]]
    # Only lines starting with whitespace can be blank; they are rare, so check them one by one.
    for i in np.flatnonzero(np.isin(first, WHITESPACE)):
        nonblank[i] = bool(data[starts[i] : ends[i]].strip())
    return nonblank


__all__ = ["WHITESPACE", "RawTable", "check_text", "line_bounds", "nonblank_lines", "unique_names"]
