"""CSV/TSV telemetry into a `RawTable`: every cell a string, every row with its line.

polars parses the cells; numpy finds where records start (a newline after an odd number of
quotes is inside a quoted field, so records may span lines) and, only for rows the parser left
short or when it saw a long one, how many fields each record has.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np
import polars as pl

from model.telemetry.errors import TelemetryError, clip
from model.telemetry.raw import RawTable, nonblank_lines, unique_names

SEPARATORS = (",", "\t", ";")
"""Separators recognized from the header line (the most frequent one wins)."""


@dataclass(frozen=True)
class _CsvLayout:
    """Where each record (header included) of a CSV file starts and ends, and its line."""

    starts: np.ndarray
    ends: np.ndarray
    lines: np.ndarray
    quotes: np.ndarray


def _csv_layout(name: str, data: bytes, buf: np.ndarray) -> _CsvLayout:
    """Record bounds. A newline after an odd number of quotes is inside a quoted field and does
    not end the record (RFC 4180 escapes a quote by doubling it, which keeps the parity)."""
    newlines = np.flatnonzero(buf == 10)
    quotes = np.flatnonzero(buf == ord('"')) if b'"' in data else np.empty(0, np.int64)
    if len(quotes) % 2:
        line = int(np.searchsorted(newlines, quotes[-1])) + 1
        raise TelemetryError(name, "unbalanced quote: a quoted field never closes", line=line)
    ends = newlines[np.searchsorted(quotes, newlines) % 2 == 0] if quotes.size else newlines
    starts = np.concatenate(([0], ends + 1))
    ends = np.concatenate((ends, [len(buf)]))
    if starts[-1] == len(buf):
        starts, ends = starts[:-1], ends[:-1]
    lines = np.searchsorted(newlines, starts) + 1
    return _CsvLayout(starts, ends, lines.astype(np.int64), quotes)


def _separators(buf: np.ndarray, sep: str, quotes: np.ndarray) -> np.ndarray:
    """(bytes,) uint8: 1 at each separator outside quoted fields."""
    mask = (buf == ord(sep)).view(np.uint8)
    if quotes.size:
        edges = np.zeros(len(buf) + 1, np.int8)
        edges[quotes[0::2]] = 1  # a quoted field opens ...
        edges[quotes[1::2]] = -1  # ... and closes: spans never overlap, so the sum is 0 or 1
        mask = mask & (np.cumsum(edges[:-1], dtype=np.int8) == 0)
    return mask


SHORT_RECORDS_ONE_BY_ONE = 10_000
"""Up to this many possibly-short records are re-read one by one; more are counted at once."""


def _fields_per_record(
    data: bytes, buf: np.ndarray, sep: str, layout: _CsvLayout, frame: pl.DataFrame, too_long: bool
) -> np.ndarray:
    """Fields in every data record (header excluded).

    A record shorter than the header leaves its last column null and one longer makes the
    parser complain, so when neither happens every record is full and nothing is counted.
    Otherwise the records whose last column is null are re-read with the csv module (few), or
    all separators outside quotes are counted at once (many, or a record was too long).
    """
    columns = frame.width
    fields = np.full(frame.height, columns, np.int64)
    short = frame[:, -1].is_null().to_numpy()
    candidates = np.flatnonzero(short)
    if not too_long and len(candidates) <= SHORT_RECORDS_ONE_BY_ONE:
        for row in candidates:  # few rows; quoting makes each a small sequential parse
            record = data[layout.starts[row + 1] : layout.ends[row + 1]].decode("utf-8")
            fields[row] = len(next(csv.reader([record.rstrip("\r")], delimiter=sep), []))
        return fields
    counts = np.add.reduceat(_separators(buf, sep, layout.quotes), layout.starts, dtype=np.int32)
    return counts[1:].astype(np.int64) + 1


def _parse_csv(
    name: str, data: bytes, sep: str, names: dict[str, str]
) -> tuple[pl.DataFrame, bool]:
    """All cells as strings; also whether some line has more fields than the header."""
    options = {
        "separator": sep,
        "has_header": True,
        "infer_schema": False,
        "new_columns": list(names),
    }
    for truncate in (False, True):
        try:
            return pl.read_csv(data, truncate_ragged_lines=truncate, **options), truncate
        except pl.exceptions.PolarsError as exc:
            if truncate or "more fields" not in str(exc):
                first = clip(str(exc).strip().splitlines()[0])
                raise TelemetryError(name, f"cannot parse as CSV: {first}") from None
    raise AssertionError("unreachable")


def read_csv_table(name: str, data: bytes) -> RawTable:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    header_line = data.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
    if not header_line.strip():
        raise TelemetryError(name, "header line is empty", line=1)
    sep = max(SEPARATORS, key=header_line.count)
    try:
        written = next(csv.reader([header_line], delimiter=sep, strict=True))
    except csv.Error as exc:
        raise TelemetryError(name, f"bad header: {exc}", line=1) from None
    names = unique_names(name, written)
    buf = np.frombuffer(data, np.uint8)
    layout = _csv_layout(name, data, buf)
    frame, too_long = _parse_csv(name, data, sep, names)
    nonblank = nonblank_lines(data, buf, layout.starts, layout.ends)
    if frame.height != len(layout.starts) - 1:
        raise TelemetryError(
            name,
            f"CSV parser found {frame.height} rows but the file has {len(layout.starts) - 1} "
            "records; check quoting",
        )
    fields = _fields_per_record(data, buf, sep, layout, frame, too_long)
    line, blank = layout.lines[1:], ~nonblank[1:]
    warnings = []
    if blank.any():
        warnings.append(f"{name}: skipped {int(blank.sum())} blank lines")
        keep = ~blank
        frame, line, fields = frame.filter(pl.Series(keep)), line[keep], fields[keep]
    malformed = fields != len(names)
    notes = {
        int(r): f"{fields[r]} fields, the header has {len(names)}"
        for r in np.flatnonzero(malformed)[:20]
    }
    return RawTable(name, "csv", frame, names, line, malformed, notes, tuple(warnings))


__all__ = ["SEPARATORS", "read_csv_table"]
