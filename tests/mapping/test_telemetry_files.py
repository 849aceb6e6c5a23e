"""What a telemetry file holds is read from its content, whatever its name."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import polars as pl
import pytest

from packets.errors import TelemetryProblem
from tests.telemetry.test_chrome_trace import pytorch_trace
from tests.telemetry.test_nsight import FLASH, GEMM, ncu_csv, nsys_export
from triage.telemetry.files import read_telemetry, telemetry_kind

KERNELS = pl.DataFrame({"op": ["gemm"] * 3, "dtype": "bf16", "m": [16, 32, 64], "n": 4096,
                        "k": 4096, "latency_us": [20.0, 24.0, 30.0]})  # fmt: skip
REQUESTS = pl.DataFrame({"arrival_ms": [0.0, 1.0, 2.5], "seq_len": [128, 512, 128],
                         "core": [0, 1, 0], "queue_wait_ms": [0.0, 0.2, 0.1],
                         "latency_ms": [30.0, 80.0, 31.0]})  # fmt: skip


@pytest.mark.parametrize(
    ("name", "write", "kind"),
    [
        ("k.csv", lambda p: KERNELS.write_csv(p), "kernels"),
        ("k.tsv", lambda p: KERNELS.write_csv(p, separator="\t"), "kernels"),
        ("k.ndjson", lambda p: KERNELS.write_ndjson(p), "kernels"),
        ("k.json", lambda p: KERNELS.write_json(p), "kernels"),
        ("k.dat", lambda p: KERNELS.write_parquet(p), "kernels"),
        ("r.parquet", lambda p: REQUESTS.write_parquet(p), "requests"),
        ("r.csv", lambda p: REQUESTS.write_csv(p), "requests"),
        ("t.json", lambda p: p.write_text(json.dumps(pytorch_trace())), "trace"),
        (
            "t.json.gz",
            lambda p: p.write_bytes(gzip.compress(json.dumps(pytorch_trace()).encode())),
            "trace",
        ),
        ("t.json", lambda p: p.write_text(json.dumps(pytorch_trace()["traceEvents"])), "trace"),
        ("profile.sqlite", lambda p: nsys_export(p, [(GEMM, 0, 9_000)]), "nsys"),
        ("x.db", lambda p: nsys_export(p, [(GEMM, 0, 9_000)]), "nsys"),
        ("ncu.csv", lambda p: p.write_text(ncu_csv([(GEMM, "12.5")])), "ncu"),
        (
            "ncu.txt",
            lambda p: p.write_text(ncu_csv([(GEMM, "12.5")], preamble="==PROF== Connected\n")),
            "ncu",
        ),
    ],
)
def test_kind_comes_from_the_content(tmp_path: Path, name: str, write, kind: str) -> None:
    path = tmp_path / name
    write(path)
    assert telemetry_kind(path) == kind


def test_kernel_files_and_traces_merge_with_their_provenance(tmp_path: Path) -> None:
    KERNELS.write_csv(tmp_path / "k.csv")
    REQUESTS.write_parquet(tmp_path / "r.parquet")
    (tmp_path / "t.json").write_text(json.dumps(pytorch_trace()))
    inputs = read_telemetry([tmp_path / "k.csv", tmp_path / "r.parquet", tmp_path / "t.json"],
                            dtype="bf16")  # fmt: skip
    rows = inputs.kernels
    assert rows.frame.height == 3 + rows.frame.filter(pl.col("source") == "t.json").height
    assert rows.where(0) == f"{tmp_path / 'k.csv'}:2"
    assert rows.where(rows.frame.height - 1).startswith(f"{tmp_path / 't.json'}: event ")
    assert rows.not_compared["batched_gemm"] == 1  # the bmm in the trace
    assert inputs.requests.frame.height == 3
    assert inputs.files == {"kernels": [str(tmp_path / "k.csv")],
                            "requests": [str(tmp_path / "r.parquet")],
                            "trace": [str(tmp_path / "t.json")], "nsys": [],
                            "ncu": []}  # fmt: skip


def test_a_file_that_is_none_of_them_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("name,value\na,1\n")
    with pytest.raises(TelemetryProblem, match=r"x\.csv: neither kernel telemetry"):
        telemetry_kind(path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "k.csv"
    os.mkfifo(fifo)  # no writer: opening it for a plain read would block forever
    with pytest.raises(TelemetryProblem) as caught:
        read_telemetry([fifo], dtype="bf16")
    assert str(caught.value) == f"{fifo}: is a FIFO (named pipe); telemetry must be a regular file"


def test_nsight_exports_join_the_kernel_rows(tmp_path: Path) -> None:
    KERNELS.write_csv(tmp_path / "k.csv")
    nsys_export(tmp_path / "p.sqlite", [(GEMM, 0, 9_000), (FLASH, 10_000, 12_000)])
    (tmp_path / "n.csv").write_text(ncu_csv([(GEMM, "12.5"), (FLASH, "3.0")]))
    inputs = read_telemetry([tmp_path / "k.csv", tmp_path / "p.sqlite", tmp_path / "n.csv"],
                            dtype="bf16")  # fmt: skip
    rows = inputs.kernels
    assert [t.file for t in rows.traces] == [str(tmp_path / "p.sqlite"), str(tmp_path / "n.csv")]
    assert rows.frame.height == 3  # Nsight records no operand shapes: nothing else to compare
    assert rows.not_compared == {"not_gemm": 2, "no_shape": 2, "batched_gemm": 0}
    assert rows.report.counts == {"not_gemm": 2, "no_shape": 2}
    assert rows.report.rows_kept == 3
