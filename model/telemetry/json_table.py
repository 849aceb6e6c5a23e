"""NDJSON and JSON-array telemetry into a `RawTable`.

NDJSON goes through polars when it can; Python's json takes over when polars refuses a file
(NaN/Infinity written by Python, a bad line, mixed nested values) so that bad lines become
counted `malformed_row` exclusions with their line numbers instead of a failed read.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
import polars as pl

from model.telemetry.bounded import MAX_JSON_TABLE_BYTES
from model.telemetry.errors import TelemetryError, token
from model.telemetry.raw import RawTable, line_bounds, nonblank_lines, unique_names


def read_json_table(name: str, data: bytes, content: str) -> RawTable:
    if content == "json-array":
        return _read_json_array(name, data)
    try:
        frame = pl.read_ndjson(io.BytesIO(data), infer_schema_length=None)
    except pl.exceptions.PolarsError:
        # Python's json also reads NaN/Infinity and lets us point at the bad line.
        return _read_ndjson_slow(name, data)
    buf = np.frombuffer(data, np.uint8)
    starts, ends = line_bounds(buf)
    line = np.flatnonzero(nonblank_lines(data, buf, starts, ends)).astype(np.int64) + 1
    if len(line) != frame.height:
        return _read_ndjson_slow(name, data)
    names = unique_names(name, frame.columns)
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
    names = unique_names(name, written)
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
    if len(data) > MAX_JSON_TABLE_BYTES:
        raise TelemetryError(
            name,
            f"NDJSON that polars cannot read (a bad line, NaN, mixed value types) is read line "
            f"by line only up to {MAX_JSON_TABLE_BYTES >> 20} MiB: fix the lines or split the file",
        )
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
        keys = ", ".join(token(k).strip("'") for k in list(whole)[:6])
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


__all__ = ["read_json_table"]
