"""Request telemetry: one row per served request (arrival, shape, core, queue wait, latency).

`read_request_telemetry(paths)` reads CSV/TSV, Parquet, NDJSON or JSON-array files, converts
times to milliseconds, checks every row, drops exact duplicates and returns the kept rows
sorted by arrival (stable: ties keep file order), with each row's file and line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from model.telemetry.checks import RowCheck, first_failures
from model.telemetry.columns import (
    TimeColumn,
    find_time_column,
    is_whole,
    number_column,
    text_column,
    unit_factor,
)
from model.telemetry.errors import TelemetryError
from model.telemetry.ingest import DUPLICATE, FileRows, Ingested, ingest
from model.telemetry.raw import RawTable

ARRIVAL_BASES = ("arrival", "arrival_time", "timestamp")
WAIT_BASES = ("queue_wait", "queue_delay", "queueing_delay")
LATENCY_BASES = ("latency", "e2e_latency", "end_to_end_latency", "total_latency")

EPOCH_BANDS = ((1e8, 1e11, "s"), (1e11, 1e14, "ms"), (1e14, 1e17, "us"), (1e17, 1e20, "ns"))
"""Median magnitude of a unitless numeric `timestamp` -> its Unix-epoch unit (1e8 s is 1973,
1e11 s is year 5138, so the bands cannot overlap for real clocks)."""

REQUEST_SCHEMA: dict[str, pl.DataType] = {
    "arrival_ms": pl.Float64,
    "seq_len": pl.Int64,
    "core": pl.Int64,
    "queue_wait_ms": pl.Float64,
    "latency_ms": pl.Float64,
}
"""Normalized request columns: arrival on the file's clock (ms; date-times become ms since the
Unix epoch, UTC), runtime shape in tokens, 0-based core, queue wait and end-to-end latency (ms)."""

REQUEST_REASONS: dict[str, str] = {
    "malformed_row": "not a well-formed record (CSV field count, NDJSON line not an object)",
    "bad_arrival": "arrival empty, not a number or date-time, NaN/inf or negative",
    "bad_seq_len": "seq_len empty or not a whole number >= 1",
    "bad_core": "core empty or not a whole number >= 0",
    "bad_queue_wait": "queue wait empty, not a number, NaN/inf or negative",
    "bad_latency": "latency empty, not a number, NaN/inf, zero or negative",
    "wait_exceeds_latency": "queue wait longer than the request's whole latency",
    DUPLICATE: "every column equal to an earlier row (any file read)",
}
"""Exclusion reasons of `read_request_telemetry`, in check order; a row counts for its first."""


@dataclass(frozen=True, eq=False)
class RequestTelemetry(Ingested):
    """Request telemetry read from one or more files.

    `frame` has the columns of `REQUEST_SCHEMA`, rows sorted by arrival_ms (stable: ties keep
    file order); the other attributes are described on `Ingested`.
    """


def read_request_telemetry(paths: str | Path | Iterable[str | Path]) -> RequestTelemetry:
    """Read, normalize, validate and sort request telemetry files.

    Raises:
        TelemetryError: a file is empty, header-only, not text/Parquet, lacks a required column
            or a time column with a unit, or every row is excluded.
    """
    done = ingest(paths, _normalize, REQUEST_REASONS, RequestTelemetry)
    order = np.argsort(done.frame["arrival_ms"].to_numpy(), kind="stable")
    warnings = list(done.warnings)
    if np.any(order != np.arange(len(order))):
        warnings.append("rows were not in arrival order; sorted by arrival_ms (stable)")
    return RequestTelemetry(
        done.frame[order],
        done.provenance.take(order),
        done.report,
        done.conversions,
        tuple(warnings),
    )


def _epoch_column(raw: RawTable, name: str) -> tuple[pl.Series, str]:
    """A unitless `timestamp`: date-time text -> ms since the epoch (UTC), or numbers whose
    magnitude names their Unix-epoch unit."""
    file = raw.path
    numbers, present = number_column(raw.frame, name, file)
    if numbers.is_not_null().sum() >= max(int(present.sum()), 1) / 2:
        median = numbers.filter(numbers.is_finite() & (numbers > 0)).median()
        for low, high, unit in EPOCH_BANDS:
            if median is not None and low <= median < high:
                factor = unit_factor(unit, "ms")
                note = f"{file}: {name} -> arrival_ms (Unix epoch {unit} by magnitude; x{factor:g})"
                return numbers * factor, note
        raise TelemetryError(
            file,
            f"numbers without a unit that are not Unix epoch times (median {median}); "
            f"rename it {name}_s, {name}_ms, {name}_us or {name}_ns",
            column=raw.original_names[name],
        )
    parsed = text_column(raw.frame, name, file).str.to_datetime(
        time_unit="us", time_zone="UTC", strict=False
    )
    note = f"{file}: {name} -> arrival_ms (date-times, ms since the Unix epoch, UTC)"
    return parsed.dt.epoch("us").cast(pl.Float64) / 1e3, note


def _normalize(raw: RawTable) -> FileRows:
    frame, file = raw.frame, raw.path
    missing = [c for c in ("seq_len", "core") if c not in frame.columns]
    if missing:
        raise TelemetryError(
            file, f"column missing (columns found: {raw.columns_found})", column=missing[0]
        )
    times: dict[str, TimeColumn] = {}
    arrival_named = [c for c in frame.columns if c.rpartition("_")[0] in ARRIVAL_BASES]
    conversions = []
    if not arrival_named and "timestamp" in frame.columns:
        arrival, note = _epoch_column(raw, "timestamp")
        arrival_name = "timestamp"
        conversions.append(note)
    else:
        times["arrival"] = find_time_column(
            file, frame.columns, ARRIVAL_BASES, "arrival_ms", raw.columns_found
        )
        arrival_name = times["arrival"].name
        arrival = number_column(frame, arrival_name, file)[0] * times["arrival"].factor
    times["wait"] = find_time_column(
        file, frame.columns, WAIT_BASES, "queue_wait_ms", raw.columns_found
    )
    times["latency"] = find_time_column(
        file, frame.columns, LATENCY_BASES, "latency_ms", raw.columns_found
    )
    targets = {"arrival": "arrival_ms", "wait": "queue_wait_ms", "latency": "latency_ms"}
    conversions += [column.conversion(file, targets[key]) for key, column in times.items()]
    wait_name, latency_name = times["wait"].name, times["latency"].name
    used = {arrival_name, wait_name, latency_name, "seq_len", "core"}
    ignored = [raw.original_names[c] for c in frame.columns if c not in used]
    warnings = [f"{file}: ignored columns: {', '.join(ignored)}"] if ignored else []
    work = pl.DataFrame(
        [
            pl.Series("malformed", raw.malformed),
            arrival.alias("arrival_ms"),
            number_column(frame, "seq_len", file)[0].alias("seq_len"),
            number_column(frame, "core", file)[0].alias("core"),
            (number_column(frame, wait_name, file)[0] * times["wait"].factor).alias(
                "queue_wait_ms"
            ),
            (number_column(frame, latency_name, file)[0] * times["latency"].factor).alias(
                "latency_ms"
            ),
        ]
    )
    shown = raw.original_names
    arrival_ms, seq_len, core = pl.col("arrival_ms"), pl.col("seq_len"), pl.col("core")
    wait, latency = pl.col("queue_wait_ms"), pl.col("latency_ms")

    def fails(ok: pl.Expr) -> pl.Expr:
        return ~ok.fill_null(False)

    checks = [
        RowCheck("malformed_row", "", pl.col("malformed"), "malformed row"),
        RowCheck(
            "bad_arrival",
            shown[arrival_name],
            fails(arrival_ms.is_finite() & (arrival_ms >= 0)),
            "not a finite time >= 0",
        ),
        RowCheck(
            "bad_seq_len",
            shown["seq_len"],
            fails(is_whole(seq_len) & (seq_len >= 1)),
            "not a whole number >= 1",
        ),
        RowCheck(
            "bad_core",
            shown["core"],
            fails(is_whole(core) & (core >= 0)),
            "not a whole number >= 0",
        ),
        RowCheck(
            "bad_queue_wait",
            shown[wait_name],
            fails(wait.is_finite() & (wait >= 0)),
            "not a finite time >= 0",
        ),
        RowCheck(
            "bad_latency",
            shown[latency_name],
            fails(latency.is_finite() & (latency > 0)),
            "not a finite time > 0",
        ),
        RowCheck(
            "wait_exceeds_latency",
            shown[wait_name],
            wait > latency,
            f"longer than {shown[latency_name]}",
        ),
    ]
    codes = first_failures(work, checks)
    typed = work.select(
        pl.col(c).cast(pl.Int64, strict=False) if dtype == pl.Int64 else pl.col(c)
        for c, dtype in REQUEST_SCHEMA.items()
    )
    return FileRows(typed, checks, codes, tuple(conversions), tuple(warnings))


__all__ = ["REQUEST_REASONS", "REQUEST_SCHEMA", "RequestTelemetry", "read_request_telemetry"]
