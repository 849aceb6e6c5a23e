"""NVIDIA Nsight exports: device kernels of an Nsight Systems SQLite export and of an Nsight
Compute raw CSV, as `ChromeTrace` kernel rows (names -> ops by `kernel_names`, `dur` checked the
same way as a trace's).

Nsight Systems, `nsys export --type sqlite`: table `CUPTI_ACTIVITY_KIND_KERNEL` (one row per
kernel execution; `start`, `end` in ns; `gridX/Y/Z`, `blockX/Y/Z`; `streamId`; `globalPid`;
`demangledName` and `shortName` are ids into `StringIds(id, value)`), as NVIDIA's "SQLite Export
Schema Reference" documents it. The database is opened read-only (`file:...?mode=ro` URI,
`query_only`), after the size cap, and at most `MAX_SQLITE_KERNELS` rows are read.

Nsight Compute, `ncu --csv --page raw`: a header row starting `"ID","Process ID","Process
Name","Host Name","Kernel Name",...` (lines before it, such as `==PROF==` messages, are skipped),
a units row (`nsecond`, `usecond`, `msecond`, `second` under time metrics), then one row per
kernel; the time is the `gpu__time_duration.sum` metric; numbers may carry thousands
separators; `Block Size`/`Grid Size` read `(x, y, z)`.

Neither export records operand shapes, so their GEMM kernels cannot be compared with the model
(they are counted as `no_shape`); they still give per-op kernel time and unmapped names.
"""

from __future__ import annotations

import csv
import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

from model.telemetry.bounded import (
    MAX_SQLITE_BYTES,
    MAX_SQLITE_KERNELS,
    MAX_TABLE_BYTES,
    open_regular,
    read_regular,
)
from model.telemetry.chrome_trace import ChromeTrace, KernelCollector
from model.telemetry.columns import UNIT_POWER, unit_factor
from model.telemetry.errors import TelemetryError
from model.telemetry.raw import check_text

SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite 3 database file."""

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MAX_NAME_CHARS = 4096
"""Kernel names are cut to this many characters in the query (template names run to ~2,000)."""

NCU_TIME_METRIC = "gpu__time_duration.sum"
NCU_UNITS = {"nsecond": "ns", "usecond": "us", "msecond": "ms", "second": "s"}
"""Nsight Compute unit names -> the unit suffixes of `columns.UNIT_POWER`."""

_TRIPLE = re.compile(r"^\(?\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)?$")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def read_nsys_sqlite(path: str | Path, *, max_kernels: int = MAX_SQLITE_KERNELS) -> ChromeTrace:
    """Device kernels of an Nsight Systems SQLite export (module docstring).

    Raises:
        TelemetryError: not a regular file, over the cap, not an SQLite database, no kernel
            table (profiled without CUDA trace: a CPU-only profile), missing columns, more than
            `max_kernels` kernels, or no kernel at all.
    """
    name = str(path)
    with open_regular(name, MAX_SQLITE_BYTES, "Nsight Systems export") as handle:
        if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
            raise TelemetryError(name, "not an SQLite database (nsys export --type sqlite)")
    uri = f"file:{quote(str(Path(name).resolve()))}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise TelemetryError(name, f"cannot open the SQLite export: {exc}") from None
    try:
        conn.execute("PRAGMA query_only = ON")
        return _nsys_kernels(name, conn, max_kernels)
    except sqlite3.Error as exc:
        raise TelemetryError(name, f"cannot read the SQLite export: {exc}") from None
    finally:
        conn.close()


def _nsys_kernels(name: str, conn: sqlite3.Connection, max_kernels: int) -> ChromeTrace:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if KERNEL_TABLE not in tables:
        raise TelemetryError(
            name,
            f"no {KERNEL_TABLE} table: no device kernels recorded (a CPU-only profile? "
            "profile with nsys profile --trace=cuda)",
        )
    have = _columns(conn, KERNEL_TABLE)
    label = next((c for c in ("demangledName", "shortName") if c in have), None)
    missing = [c for c in ("start", "end") if c not in have]
    if label is None or missing or "StringIds" not in tables:
        need = ", ".join([*missing, *([] if label else ["demangledName or shortName"])])
        raise TelemetryError(name, f"{KERNEL_TABLE} lacks {need or 'the StringIds table'}")

    def col(c: str) -> str:
        return f"k.{c}" if c in have else "NULL"

    query = (
        f"SELECT substr(s.value, 1, {MAX_NAME_CHARS}), k.start, k.end, {col('streamId')}, "
        f"{col('globalPid')}, {col('deviceId')}, {col('gridX')}, {col('gridY')}, {col('gridZ')}, "
        f"{col('blockX')}, {col('blockY')}, {col('blockZ')} FROM {KERNEL_TABLE} AS k "
        f"LEFT JOIN StringIds AS s ON s.id = k.{label} ORDER BY k.start LIMIT ?"
    )
    collector = KernelCollector(name, row_label="row")
    for row_number, row in enumerate(conn.execute(query, (max_kernels + 1,))):
        if row_number == max_kernels:
            raise TelemetryError(
                name, f"more than {max_kernels:,} kernels (the row cap); export a range"
            )
        label_text, start, end, stream, pid, device, *launch = row
        ts = start / 1000 if isinstance(start, int) else None
        dur = (end - start) / 1000 if isinstance(start, int) and isinstance(end, int) else None
        collector.add(
            row_number,
            str(label_text or ""),
            ts,
            dur,
            pid=pid,
            tid=device,
            stream=stream,
            grid=[x for x in launch[:3] if x is not None] or None,
            block=[x for x in launch[3:] if x is not None] or None,
            dur_column="end - start",
        )
    return collector.finish({}, {}, (), f"{KERNEL_TABLE} holds no kernels")


def ncu_header_line(lines: list[str]) -> int | None:
    """0-based index of the Nsight Compute raw CSV header among `lines`, None if not found."""
    for i, line in enumerate(lines):
        if line.startswith('"ID",') and '"Kernel Name"' in line:
            return i
    return None


def _ncu_number(text: str) -> float | None:
    cleaned = text.replace(",", "").strip()
    try:
        return float(cleaned)
    except ValueError:
        return None


def _triple(text: str) -> list[int] | None:
    match = _TRIPLE.match(text.strip())
    return [int(g) for g in match.groups()] if match else None


def read_ncu_csv(path: str | Path) -> ChromeTrace:
    """Device kernels of an Nsight Compute `--csv --page raw` file (module docstring).

    Raises:
        TelemetryError: not a regular file, over the table cap, not UTF-8 text, no header row,
            no `gpu__time_duration.sum` column or unit, or no kernel row.
    """
    name = str(path)
    data = read_regular(name, MAX_TABLE_BYTES, "Nsight Compute CSV")
    check_text(name, data)
    lines = data.decode("utf-8-sig").splitlines()
    header_at = ncu_header_line(lines)
    if header_at is None:
        raise TelemetryError(
            name, 'no Nsight Compute header row ("ID","Process ID",...,"Kernel Name")'
        )
    reader = csv.reader(lines[header_at:])
    header = next(reader)
    if NCU_TIME_METRIC not in header:
        raise TelemetryError(
            name,
            f"no {NCU_TIME_METRIC} column (profile with ncu --metrics {NCU_TIME_METRIC})",
            line=header_at + 1,
        )
    at = {c: header.index(c) for c in header}
    time_col = at[NCU_TIME_METRIC]
    collector = KernelCollector(name, row_label="line")
    factor = None
    for record in reader:
        line = header_at + reader.line_num
        if len(record) != len(header):
            if not any(cell.strip() for cell in record):
                continue
            raise TelemetryError(
                name, f"{len(record)} fields, the header has {len(header)}", line=line
            )
        if factor is None:
            unit = NCU_UNITS.get(record[time_col].strip(), record[time_col].strip())
            if record[at["Kernel Name"]].strip() == "" and unit in UNIT_POWER:
                factor = unit_factor(unit, "us")
                continue
            raise TelemetryError(
                name,
                "no units row after the header (expected nsecond/usecond/msecond/second)",
                line=line,
                column=NCU_TIME_METRIC,
            )
        value = _ncu_number(record[time_col])
        collector.add(
            line,
            record[at["Kernel Name"]],
            None,
            record[time_col] if value is None else value * factor,
            pid=record[at["Process ID"]] if "Process ID" in at else None,
            stream=_int_or_none(record[at["Stream"]]) if "Stream" in at else None,
            grid=_triple(record[at["Grid Size"]]) if "Grid Size" in at else None,
            block=_triple(record[at["Block Size"]]) if "Block Size" in at else None,
            line=line,
            dur_column=NCU_TIME_METRIC,
        )
    return collector.finish({}, {}, (), "no kernel rows after the header and units rows")


def _int_or_none(text: str) -> int | None:
    value = _ncu_number(text)
    return int(value) if value is not None and value.is_integer() else None


__all__ = [
    "KERNEL_TABLE",
    "MAX_NAME_CHARS",
    "NCU_TIME_METRIC",
    "SQLITE_MAGIC",
    "ncu_header_line",
    "read_ncu_csv",
    "read_nsys_sqlite",
]
