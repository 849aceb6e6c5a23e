"""The bounded-read primitive and the per-kind caps of the table readers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from model.telemetry import TelemetryError, read_kernel_telemetry
from model.telemetry.bounded import MAX_JSON_TABLE_BYTES, read_head, read_regular


def test_read_regular_takes_exactly_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "f.csv"
    path.write_bytes(b"x" * 100)
    assert read_regular(path, 100) == b"x" * 100
    with pytest.raises(TelemetryError) as caught:
        read_regular(path, 99, "table")
    assert str(caught.value) == f"{path}: table is over the 99-byte cap for this kind of file"


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
        (lambda p: p.mkdir(), "a directory"),
    ],
)
def test_only_regular_files_are_opened(tmp_path: Path, make, kind: str) -> None:
    path = tmp_path / "t.csv"
    make(path)
    for read in (lambda: read_regular(path, 10**6), lambda: read_head(path, 10)):
        with pytest.raises(TelemetryError) as caught:
            read()
        assert str(caught.value) == f"{path}: is {kind}; telemetry must be a regular file"


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TelemetryError) as caught:
        read_regular(tmp_path / "none.csv", 10)
    assert str(caught.value) == f"{tmp_path / 'none.csv'}: cannot open: No such file or directory"


def test_json_array_tables_have_the_smaller_cap(tmp_path: Path) -> None:
    """A JSON array is read whole through Python's json (~10-20x its size in memory)."""
    path = tmp_path / "k.json"
    path.write_bytes(b"[" + b" " * MAX_JSON_TABLE_BYTES + b"]")
    with pytest.raises(TelemetryError) as caught:
        read_kernel_telemetry(path)
    assert (
        str(caught.value)
        == f"{path}: JSON-array table is over the 64 MiB cap for this kind of file"
    )


def test_ndjson_polars_refuses_goes_line_by_line_only_under_the_cap(tmp_path: Path) -> None:
    line = b'{"op": "gemm", "dtype": "bf16", "m": 1, "n": 2, "k": 3, "latency_us": 4.5}\n'
    nan = b'{"op": "gemm", "dtype": "bf16", "m": 1, "n": 2, "k": 3, "latency_us": NaN}\n'
    path = tmp_path / "k.ndjson"
    path.write_bytes(nan + line * (MAX_JSON_TABLE_BYTES // len(line) + 1))
    with pytest.raises(TelemetryError, match=r"k\.ndjson: NDJSON that polars cannot read"):
        read_kernel_telemetry(path)
    path.write_bytes(nan + line * 3)  # small: read line by line, the NaN row excluded
    assert read_kernel_telemetry(path).report.counts == {"nonfinite_latency": 1, "duplicate": 2}
