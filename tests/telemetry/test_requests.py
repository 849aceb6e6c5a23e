"""Request telemetry: units, epoch/date-time arrivals, validation, sorting."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from model.telemetry import REQUEST_SCHEMA, TelemetryError, read_request_telemetry

HEADER = "arrival_ms,seq_len,core,queue_wait_ms,latency_ms\n"


def test_rows_are_validated_and_sorted(write) -> None:
    rows = [
        "5,10,0,1,3",  # 2 kept
        "1,20,1,0,2",  # 3 kept
        "2,20,1,3,2",  # 4 wait > latency
        "-1,5,0,0,1",  # 5 negative arrival
        "3,0,0,0,1",  # 6 seq_len 0
        "3,5,-1,0,1",  # 7 core -1
        "3,5,0,nan,1",  # 8 wait NaN
        "3,5,0,0,0",  # 9 zero latency
        "1,20,1,0,2",  # 10 duplicate of 3
        "4,7,2,2,2",  # 11 kept: wait == latency allowed
        "x,5,0,0,1",  # 12 arrival not a number
        "3,5.5,0,0,1",  # 13 seq_len not whole
    ]
    path = write("r.csv", HEADER + "\n".join(rows) + "\n")
    tel = read_request_telemetry(path)
    assert tel.frame.schema == pl.Schema(REQUEST_SCHEMA)
    assert tel.frame.rows() == [
        (1.0, 20, 1, 0.0, 2.0),
        (4.0, 7, 2, 2.0, 2.0),
        (5.0, 10, 0, 1.0, 3.0),
    ]
    assert tel.provenance.line.tolist() == [3, 11, 2]
    assert tel.report.counts == {
        "bad_arrival": 2,
        "bad_seq_len": 2,
        "bad_core": 1,
        "bad_queue_wait": 1,
        "bad_latency": 1,
        "wait_exceeds_latency": 1,
        "duplicate": 1,
    }
    assert tel.warnings == ("rows were not in arrival order; sorted by arrival_ms (stable)",)
    shown = [str(r) for e in tel.report.exclusions for r in e.examples]
    assert f"{path}:4: queue_wait_ms: longer than latency_ms ('3')" in shown
    assert f"{path}:10: same values as {path}:3" in shown


def test_units_are_converted(write) -> None:
    path = write(
        "r.csv",
        "arrival_s,seq_len,core,queue_delay_us,e2e_latency_ns\n0.5,10,0,250,3000000\n",
    )
    tel = read_request_telemetry(path)
    assert tel.frame.row(0) == (500.0, 10, 0, 0.25, 3.0)
    assert tel.conversions == (
        f"{path}: arrival_s -> arrival_ms (x1000)",
        f"{path}: queue_delay_us -> queue_wait_ms (x0.001)",
        f"{path}: e2e_latency_ns -> latency_ms (x1e-06)",
    )


@pytest.mark.parametrize(
    ("stamp", "unit"),
    [("1714564800.25", "s"), ("1714564800250", "ms"), ("1714564800250000", "us")],
)
def test_epoch_timestamps_by_magnitude(stamp: str, unit: str, write) -> None:
    path = write("r.csv", f"timestamp,seq_len,core,queue_wait_ms,latency_ms\n{stamp},1,0,0,1\n")
    tel = read_request_telemetry(path)
    assert tel.frame["arrival_ms"][0] == pytest.approx(1714564800250.0, abs=1e-3)
    assert tel.conversions[0].startswith(f"{path}: timestamp -> arrival_ms (Unix epoch {unit} ")


def test_datetime_timestamps(write) -> None:
    path = write(
        "r.csv",
        "timestamp,seq_len,core,queue_wait_ms,latency_ms\n"
        "2024-05-01T12:00:00.123Z,1,0,0,1\n2024-05-01T12:00:00.100Z,2,0,0,1\nyesterday,3,0,0,1\n",
    )
    tel = read_request_telemetry(path)
    assert tel.frame["arrival_ms"].to_list() == [1714564800100.0, 1714564800123.0]
    assert tel.frame["seq_len"].to_list() == [2, 1]
    assert tel.report.counts == {"bad_arrival": 1}
    assert str(tel.report.exclusions[0].examples[0]) == (
        f"{path}:4: timestamp: not a finite time >= 0 ('yesterday')"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "timestamp,seq_len,core,queue_wait_ms,latency_ms\n12,1,0,0,1\n",
            ": timestamp: numbers without a unit that are not Unix epoch times (median 12.0); "
            "rename it timestamp_s, timestamp_ms, timestamp_us or timestamp_ns",
        ),
        (
            "arrival_ms,seq_len,queue_wait_ms,latency_ms\n1,1,0,1\n",
            ": core: column missing (columns found: arrival_ms, seq_len, queue_wait_ms, latency_ms)",
        ),
        (
            "arrival_ms,seq_len,core,queue_wait_ms,latency\n1,1,0,0,1\n",
            ": latency: time column without a unit; rename it latency_us, latency_ms, latency_ns "
            "or latency_s",
        ),
        (
            "arrival_ms,seq_len,core,latency_ms\n1,1,0,1\n",
            ": no time column (expected queue_wait_{s,ms,us,ns}, queue_delay_{s,ms,us,ns}, "
            "queueing_delay_{s,ms,us,ns}, ...); columns found: arrival_ms, seq_len, core, latency_ms",
        ),
        (HEADER, ": header only, no data rows"),
    ],
)
def test_unusable_request_files(content: str, expected: str, write) -> None:
    path = write("r.csv", content)
    with pytest.raises(TelemetryError) as caught:
        read_request_telemetry(path)
    assert str(caught.value) == f"{path}{expected}"


def test_files_merge_by_arrival_with_provenance(tmp_path: Path) -> None:
    a = pl.DataFrame(
        {
            "arrival_ms": [0.0, 2.0],
            "seq_len": [8, 8],
            "core": [0, 0],
            "queue_wait_ms": [0.0, 0.1],
            "latency_ms": [1.0, 1.0],
        }
    )
    b = a.with_columns(pl.col("arrival_ms") + 1.0, core=pl.lit(1))
    a.write_parquet(tmp_path / "core0.parquet")
    b.write_ndjson(tmp_path / "core1.ndjson")
    tel = read_request_telemetry([tmp_path / "core0.parquet", tmp_path / "core1.ndjson"])
    assert tel.frame["arrival_ms"].to_list() == [0.0, 1.0, 2.0, 3.0]
    assert tel.frame["core"].to_list() == [0, 1, 0, 1]
    assert [tel.provenance.where(i) for i in range(4)] == [
        f"{tmp_path / 'core0.parquet'}: row 0",
        f"{tmp_path / 'core1.ndjson'}:1",
        f"{tmp_path / 'core0.parquet'}: row 1",
        f"{tmp_path / 'core1.ndjson'}:2",
    ]
