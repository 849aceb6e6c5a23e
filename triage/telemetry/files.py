"""Telemetry files for `workbench report`, `telemetry compare` and `telemetry calibrate`: tell
what each file holds (one detection for all three), read it with the strict readers, and merge
the kernel rows of kernel-telemetry files, Chrome traces and Nsight exports.

What a file is comes from its content, read through `model.telemetry.bounded` (regular files
only, checked on an O_NONBLOCK descriptor, so a FIFO never blocks): the SQLite magic is an
Nsight Systems export (`nsys`); a gzip file, an object with `traceEvents` or a list of events
with `ph` is a Chrome trace; a `"ID",...,"Kernel Name"` header row is an Nsight Compute raw CSV
(`ncu`); otherwise it is a table (CSV/TSV, NDJSON, JSON rows, Parquet) whose columns decide:
`op` -> kernel telemetry, `seq_len` -> request telemetry. Kernel rows of a trace or Nsight
export are its GEMM kernels whose launching op recorded m, n, k (batched GEMMs and kernels
without shapes are counted, not compared); they carry no dtype, so they are taken to run in the
packet's precision (`report`) or `--dtype` (`compare`, `calibrate`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from model.telemetry import (
    KERNEL_SCHEMA,
    ChromeTrace,
    KernelTelemetry,
    RequestTelemetry,
    TelemetryError,
    read_chrome_trace,
    read_kernel_telemetry,
    read_ncu_csv,
    read_nsys_sqlite,
    read_request_telemetry,
)
from model.telemetry.bounded import read_head
from model.telemetry.columns import normalize_column_name
from model.telemetry.errors import Exclusion, ExclusionReport
from model.telemetry.nsight import SQLITE_MAGIC, ncu_header_line
from packets.errors import TelemetryProblem, UsageError

SNIFF_BYTES = 1 << 16
"""How much of a file is read to tell what it holds."""


def _header_columns(path: Path, head: bytes) -> list[str]:
    """Column names of a tabular file from its first bytes (Parquet: its schema)."""
    if head[:4] == b"PAR1":
        try:
            return list(pl.read_parquet_schema(path))
        except Exception as exc:  # polars/arrow raise many types for corrupt files
            raise TelemetryProblem(f"{path}: not a readable Parquet file ({exc})") from None
    text = head.decode("utf-8-sig", errors="replace").lstrip()
    first = text.split("\n", 1)[0].strip()
    if text.startswith("{"):
        try:
            return list(json.loads(first))
        except (json.JSONDecodeError, TypeError):
            return []
    if text.startswith("["):
        inner = text[1:].lstrip()
        end = inner.find("}")
        try:
            return list(json.loads(inner[: end + 1])) if end >= 0 else []
        except (json.JSONDecodeError, TypeError):
            return []
    separator = max(",\t;", key=first.count)
    return [c.strip().strip('"') for c in first.split(separator)]


KINDS = ("kernels", "requests", "trace", "nsys", "ncu")
"""What a telemetry file can hold."""

PROFILE_READERS = {"trace": read_chrome_trace, "nsys": read_nsys_sqlite, "ncu": read_ncu_csv}
"""Readers of the profiler outputs whose device kernels become kernel rows."""


def telemetry_kind(path: Path) -> str:
    """One of `KINDS` (module docstring); TelemetryProblem when it is none or not a regular
    file."""
    try:
        head = read_head(path, SNIFF_BYTES)
    except TelemetryError as exc:
        raise TelemetryProblem(str(exc)) from None
    if head.startswith(SQLITE_MAGIC):
        return "nsys"
    if head[:2] == b"\x1f\x8b" or b'"traceEvents"' in head:
        return "trace"
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] == b"[" and b'"ph"' in stripped[:4096]:
        return "trace"
    lines = head.decode("utf-8-sig", errors="replace").splitlines()[:64]
    if ncu_header_line(lines) is not None:
        return "ncu"
    columns = {normalize_column_name(c) for c in _header_columns(path, head)}
    if "op" in columns:
        return "kernels"
    if "seq_len" in columns:
        return "requests"
    raise TelemetryProblem(
        f"{path}: neither kernel telemetry (an op column), request telemetry (a seq_len column), "
        "a Chrome trace (traceEvents), an Nsight Systems SQLite export nor an Nsight Compute CSV"
    )


@dataclass(frozen=True, eq=False)
class KernelRows:
    """Measured kernel rows from every kernel file and trace, in one frame.

    Attributes:
        frame: KERNEL_SCHEMA columns; rows of kernel-telemetry files first, then trace rows.
        telemetry: the kernel-telemetry files as read (None if there were none).
        traces: the traces as read.
        trace_rows: per trace, (first row in `frame`, event index of each of its rows).
        not_compared: trace kernels left out, by reason (no_shape, batched_gemm, not_gemm).
    """

    frame: pl.DataFrame
    telemetry: KernelTelemetry | None
    traces: tuple[ChromeTrace, ...]
    trace_rows: tuple[tuple[int, np.ndarray], ...]
    not_compared: dict[str, int]

    def where(self, row: int) -> str:
        """`FILE:LINE` (or `FILE: row N`, `FILE: event N`) of a row of `frame`."""
        kept = self.telemetry.frame.height if self.telemetry is not None else 0
        if row < kept:
            return self.telemetry.provenance.where(row)
        for trace, (start, events) in zip(self.traces, self.trace_rows, strict=True):
            if start <= row < start + len(events):
                return trace.where(int(events[row - start]))
        raise IndexError(f"kernel row {row} is out of range")

    @property
    def report(self) -> ExclusionReport:
        """Rows read and excluded over every kernel source: the tables' report, each profile's
        excluded kernels (bad durations), and the profile kernels not compared."""
        base = self.telemetry.report if self.telemetry is not None else ExclusionReport(0, 0)
        profile_read = sum(t.report.rows_read for t in self.traces)
        report = ExclusionReport(
            base.rows_read + profile_read,
            base.rows_kept + profile_read,
            base.exclusions,
        )
        for trace in self.traces:
            for exclusion in trace.report.exclusions:
                report = report.with_exclusion(exclusion)
        for reason, count in self.not_compared.items():
            report = report.with_exclusion(Exclusion(reason, NOT_COMPARED[reason], count))
        return report

    @property
    def warnings(self) -> tuple[str, ...]:
        """The readers' one-line notes, tables first."""
        notes = self.telemetry.warnings if self.telemetry is not None else ()
        return (*notes, *(w for trace in self.traces for w in trace.warnings))


NOT_COMPARED = {
    "not_gemm": "profiled kernels that are not GEMMs (only GEMMs carry shapes in a profile)",
    "no_shape": "profiled GEMMs without m, n, k (launching op's Input Dims not recorded)",
    "batched_gemm": "profiled batched GEMMs (compared only as plain GEMMs)",
}
"""Why a profiled kernel is left out of the comparison."""


@dataclass(frozen=True, eq=False)
class TelemetryInputs:
    """Everything `--telemetry` named, read.

    Attributes:
        kernels: measured kernel rows (None without kernel files or traces).
        requests: request telemetry (None without request files).
        files: kind -> files of that kind, in the order given.
        warnings: the readers' one-line notes (unit conversions that look wrong, ignored
            columns, unsorted requests, traces without a closing bracket...).
    """

    kernels: KernelRows | None
    requests: RequestTelemetry | None
    files: dict[str, list[str]]
    warnings: tuple[str, ...] = ()


def _trace_gemm_rows(trace: ChromeTrace, dtype: str) -> tuple[pl.DataFrame, np.ndarray, dict]:
    kernels = trace.kernels
    gemm = kernels.filter(pl.col("op") == "gemm")
    shaped = gemm.filter(pl.col("m").is_not_null() & pl.col("n").is_not_null()
                         & pl.col("k").is_not_null())  # fmt: skip
    batched = shaped.filter(pl.col("batch").fill_null(1) > 1)
    plain = shaped.filter(pl.col("batch").fill_null(1) <= 1)
    counts = {
        "not_gemm": kernels.height - gemm.height,
        "no_shape": gemm.height - shaped.height,
        "batched_gemm": batched.height,
    }
    rows = plain.select(
        pl.lit("gemm").cast(KERNEL_SCHEMA["op"]).alias("op"),
        pl.lit(dtype).cast(KERNEL_SCHEMA["dtype"]).alias("dtype"),
        "m",
        "n",
        "k",
        pl.col("dur_us").alias("latency_us"),
        pl.lit(Path(trace.file).name).alias("source"),
    )
    frame = pl.DataFrame(schema=KERNEL_SCHEMA).vstack(
        rows.with_columns(
            [pl.lit(None, t).alias(c) for c, t in KERNEL_SCHEMA.items() if c not in rows.columns]
        ).select(list(KERNEL_SCHEMA))
    )
    return frame, plain["event"].to_numpy(), counts


def classify(paths: list[Path]) -> dict[str, list[str]]:
    """Kind -> files of that kind, in the order given (UsageError for missing files or
    folders, TelemetryProblem for files that are none of `KINDS`)."""
    files: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file")
        if path.is_dir():
            raise UsageError(f"{path}: is a directory, not a telemetry file")
        files[telemetry_kind(path)].append(str(path))
    return files


def read_kernel_rows(files: dict[str, list[str]], *, dtype: str) -> KernelRows | None:
    """Kernel rows of every kernel table and profile in `files` (from `classify`); None when
    there are none. `dtype`: the precision profiled kernels are taken to run in."""
    try:
        telemetry = read_kernel_telemetry(files["kernels"]) if files["kernels"] else None
        traces = tuple(PROFILE_READERS[kind](p) for kind in PROFILE_READERS for p in files[kind])
    except TelemetryError as exc:
        raise TelemetryProblem(str(exc)) from None
    frames = [telemetry.frame] if telemetry is not None else []
    start = telemetry.frame.height if telemetry is not None else 0
    trace_rows, not_compared = [], dict.fromkeys(NOT_COMPARED, 0)
    for trace in traces:
        frame, events, counts = _trace_gemm_rows(trace, dtype)
        frames.append(frame)
        trace_rows.append((start, events))
        start += frame.height
        not_compared = {k: not_compared[k] + counts[k] for k in not_compared}
    if not frames:
        return None
    merged = pl.concat(frames, how="vertical")
    return KernelRows(merged, telemetry, traces, tuple(trace_rows), not_compared)


def read_telemetry(paths: list[Path], *, dtype: str) -> TelemetryInputs:
    """Read every file `--telemetry` names (UsageError for missing files or folders,
    TelemetryProblem for telemetry that cannot be used). `dtype`: the precision trace kernels
    are taken to run in."""
    files = classify(paths)
    kernels = read_kernel_rows(files, dtype=dtype)
    try:
        requests = read_request_telemetry(files["requests"]) if files["requests"] else None
    except TelemetryError as exc:
        raise TelemetryProblem(str(exc)) from None
    warnings = [
        *(kernels.warnings if kernels is not None else ()),
        *(requests.warnings if requests is not None else ()),
    ]
    return TelemetryInputs(kernels, requests, files, tuple(warnings))
