"""Read one tabular telemetry file (CSV/TSV, NDJSON, JSON array, Parquet) into untyped columns.

The format comes from the content, not only the extension: Parquet by its `PAR1` magic, JSON by
its first non-blank character, CSV otherwise (separator from the header line). A lying extension
gets a warning. Every data row keeps its 1-based line in the file where it can be known (CSV,
NDJSON), so the typed readers can point at bad rows. Values stay as the file holds them (CSV:
strings); typing and validation happen in `kernels`/`requests`.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl

from model.telemetry.columns import normalize_column_name
from model.telemetry.errors import TelemetryError

EXTENSION_FORMATS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".ndjson": "json",
    ".jsonl": "json",
    ".json": "json",
}
"""Formats named by file extension; content sniffing overrides a wrong one (with a warning)."""

_SEPARATORS = (",", "\t", ";")
_WHITESPACE = np.array([9, 10, 11, 12, 13, 32], dtype=np.uint8)


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


def read_table(path: str | Path) -> RawTable:
    """Read one telemetry table; raise `TelemetryError` when it is empty, binary, not UTF-8,
    unparseable or has no data rows."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TelemetryError(name, f"cannot read file: {exc.strerror or exc}") from None
    if not data.strip():
        raise TelemetryError(name, "empty file")
    warnings: list[str] = []
    content = _sniff(name, data)
    claimed = EXTENSION_FORMATS.get(Path(name).suffix.lower())
    family = "json" if content in ("ndjson", "json-array") else content
    if claimed is None:
        warnings.append(f"{name}: unknown extension; read as {content} from its content")
    elif claimed != family:
        warnings.append(f"{name}: extension says {claimed} but the content is {content}")
    if content == "parquet":
        table = _read_parquet(name, data)
    elif content == "csv":
        table = _read_csv(name, data)
    else:
        table = _read_json(name, data, content)
    if table.frame.height == 0:
        what = "header only, no data rows" if content == "csv" else "no data rows"
        raise TelemetryError(name, what)
    return replace(table, warnings=(*warnings, *table.warnings))


def _sniff(name: str, data: bytes) -> str:
    if data[:4] == b"PAR1":
        return "parquet"
    if data[:2] == b"\x1f\x8b":
        raise TelemetryError(name, "gzip-compressed; decompress it first")
    check_text(name, data)
    first = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if first == b"{":
        return "ndjson"
    if first == b"[":
        return "json-array"
    return "csv"


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


def _unique_names(name: str, written: list[str]) -> dict[str, str]:
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


# ---------------------------------------------------------------------------------------- Parquet


def _read_parquet(name: str, data: bytes) -> RawTable:
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except Exception as exc:  # polars/arrow raise many types for corrupt files
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TelemetryError(name, f"not a readable Parquet file: {first}") from None
    names = _unique_names(name, frame.columns)
    frame = frame.rename(dict(zip(frame.columns, names, strict=True)))
    rows = frame.height
    return RawTable(
        name, "parquet", frame, names, np.zeros(rows, np.int64), np.zeros(rows, bool), {}, ()
    )


# -------------------------------------------------------------------------------------------- CSV


def _line_bounds(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of every line (end excludes the newline), last line included only
    if it holds bytes."""
    newlines = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(buf)]))
    if starts[-1] == len(buf):
        starts, ends = starts[:-1], ends[:-1]
    return starts, ends


def _nonblank_lines(
    data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> np.ndarray:
    """(lines,) bool: True where the line holds a byte other than whitespace."""
    nonblank = np.ones(len(starts), bool)
    first = np.full(len(starts), 32, np.uint8)
    first[starts < ends] = buf[starts[starts < ends]]
    # Only lines starting with whitespace can be blank; they are rare, so check them one by one.
    for i in np.flatnonzero(np.isin(first, _WHITESPACE)):
        nonblank[i] = bool(data[starts[i] : ends[i]].strip())
    return nonblank


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
                first = str(exc).strip().splitlines()[0]
                raise TelemetryError(name, f"cannot parse as CSV: {first}") from None
    raise AssertionError("unreachable")


def _read_csv(name: str, data: bytes) -> RawTable:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    header_line = data.split(b"\n", 1)[0].decode("utf-8").rstrip("\r")
    if not header_line.strip():
        raise TelemetryError(name, "header line is empty", line=1)
    sep = max(_SEPARATORS, key=header_line.count)
    try:
        written = next(csv.reader([header_line], delimiter=sep, strict=True))
    except csv.Error as exc:
        raise TelemetryError(name, f"bad header: {exc}", line=1) from None
    names = _unique_names(name, written)
    buf = np.frombuffer(data, np.uint8)
    layout = _csv_layout(name, data, buf)
    frame, too_long = _parse_csv(name, data, sep, names)
    nonblank = _nonblank_lines(data, buf, layout.starts, layout.ends)
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


# ------------------------------------------------------------------------------------------- JSON


def _read_json(name: str, data: bytes, content: str) -> RawTable:
    if content == "json-array":
        return _read_json_array(name, data)
    try:
        frame = pl.read_ndjson(io.BytesIO(data), infer_schema_length=None)
    except pl.exceptions.PolarsError:
        # Python's json also reads NaN/Infinity and lets us point at the bad line.
        return _read_ndjson_slow(name, data)
    buf = np.frombuffer(data, np.uint8)
    starts, ends = _line_bounds(buf)
    line = np.flatnonzero(_nonblank_lines(data, buf, starts, ends)).astype(np.int64) + 1
    if len(line) != frame.height:
        return _read_ndjson_slow(name, data)
    names = _unique_names(name, frame.columns)
    frame = frame.rename(dict(zip(frame.columns, names, strict=True)))
    return RawTable(name, "ndjson", frame, names, line, np.zeros(frame.height, bool), {}, ())


def _scalar_text(value: object) -> str | None:
    """A JSON value as the text a CSV cell would hold (nested values as JSON text)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)


def _records_frame(name: str, records: list[tuple[int, object]], fmt: str) -> RawTable:
    """Build a string-typed RawTable from (line, parsed JSON value) pairs."""
    written: list[str] = []
    seen: set[str] = set()
    for _, rec in records:  # Python loop: JSON objects arrive one by one
        if isinstance(rec, dict):
            for key in rec:
                if key not in seen:
                    seen.add(key)
                    written.append(key)
    names = _unique_names(name, written)
    columns: dict[str, list[str | None]] = {n: [] for n in names}
    malformed = np.zeros(len(records), bool)
    notes: dict[int, str] = {}
    for r, (_, rec) in enumerate(records):
        ok = isinstance(rec, dict)
        if not ok:
            malformed[r] = True
            if len(notes) < 20:
                notes[r] = (
                    rec.message
                    if isinstance(rec, _InvalidLine)
                    else f"expected a JSON object, found {_json_type(rec)}"
                )
        for norm, original in names.items():
            columns[norm].append(_scalar_text(rec.get(original)) if ok else None)
    frame = pl.DataFrame(columns, schema=dict.fromkeys(names, pl.String))
    line = np.asarray([ln for ln, _ in records], np.int64)
    return RawTable(name, fmt, frame, names, line, malformed, notes, ())


@dataclass(frozen=True)
class _InvalidLine:
    """A line that is not valid JSON, and the parser's complaint."""

    message: str


def _json_type(value: object) -> str:
    return {list: "an array", dict: "an object", str: "a string"}.get(type(value), "a scalar")


def _read_ndjson_slow(name: str, data: bytes) -> RawTable:
    text = data.decode("utf-8-sig")
    records: list[tuple[int, object]] = []
    for number, raw in enumerate(text.splitlines(), start=1):  # JSON lines parse one at a time
        stripped = raw.strip()
        if not stripped:
            continue
        try:
            records.append((number, json.loads(stripped)))
        except json.JSONDecodeError as exc:
            records.append((number, _InvalidLine(f"invalid JSON: {exc.msg} at column {exc.colno}")))
    if records and not isinstance(records[0][1], dict):
        _refuse_single_document(name, text)
    return _records_frame(name, records, "ndjson")


def _refuse_single_document(name: str, text: str) -> None:
    """A pretty-printed JSON document is not NDJSON: say so instead of excluding every line."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        return
    if isinstance(whole, dict):
        keys = ", ".join(list(whole)[:6])
        raise TelemetryError(
            name,
            f"one JSON object (keys: {keys}), expected one JSON object per line (NDJSON) "
            "or a JSON array of row objects",
        )


def _read_json_array(name: str, data: bytes) -> RawTable:
    try:
        whole = json.loads(data.decode("utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise TelemetryError(name, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(whole, list):
        raise TelemetryError(name, "expected a JSON array of row objects")
    return _records_frame(name, [(0, rec) for rec in whole], "json-array")


__all__ = ["EXTENSION_FORMATS", "RawTable", "check_text", "read_table"]
