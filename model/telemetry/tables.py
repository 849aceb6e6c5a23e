"""Read one tabular telemetry file (CSV/TSV, NDJSON, JSON array, Parquet) into untyped columns.

The format comes from the content, not only the extension: Parquet by its `PAR1` magic, JSON by
its first non-blank character, CSV otherwise (separator from the header line). A lying extension
gets a warning. Every data row keeps its 1-based line in the file where it can be known (CSV,
NDJSON), so the typed readers can point at bad rows. Values stay as the file holds them (CSV:
strings); typing and validation happen in `kernels`/`requests`.
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl

from model.telemetry.bounded import MAX_JSON_TABLE_BYTES, MAX_TABLE_BYTES, read_regular, too_big
from model.telemetry.csv_table import read_csv_table
from model.telemetry.errors import TelemetryError, clip
from model.telemetry.json_table import read_json_table
from model.telemetry.raw import RawTable, check_text, unique_names

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


def read_table(path: str | Path) -> RawTable:
    """Read one telemetry table; raise `TelemetryError` when it is not a regular file, over its
    size cap (`bounded`), empty, binary, not UTF-8, unparseable or has no data rows."""
    name = str(path)
    data = read_regular(name, MAX_TABLE_BYTES, "table")
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
    if content == "json-array" and len(data) > MAX_JSON_TABLE_BYTES:
        raise too_big(name, "JSON-array table", MAX_JSON_TABLE_BYTES)
    if content == "parquet":
        table = _read_parquet(name, data)
    elif content == "csv":
        table = read_csv_table(name, data)
    else:
        table = read_json_table(name, data, content)
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


def _read_parquet(name: str, data: bytes) -> RawTable:
    try:
        frame = pl.read_parquet(io.BytesIO(data))
    except Exception as exc:  # polars/arrow raise many types for corrupt files
        first = clip(str(exc).strip().splitlines()[0]) if str(exc).strip() else type(exc).__name__
        raise TelemetryError(name, f"not a readable Parquet file: {first}") from None
    names = unique_names(name, frame.columns)
    frame = frame.rename(dict(zip(frame.columns, names, strict=True)))
    rows = frame.height
    return RawTable(
        name, "parquet", frame, names, np.zeros(rows, np.int64), np.zeros(rows, bool), {}, ()
    )


__all__ = ["EXTENSION_FORMATS", "RawTable", "read_table"]
