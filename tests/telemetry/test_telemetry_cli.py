"""`telemetry compare`, `telemetry calibrate` and `report` read the same files the same way:
traces and Nsight exports too, FIFOs and devices refused without blocking, a cap per kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from model.telemetry.bounded import MAX_TABLE_BYTES, MAX_TRACE_BYTES
from tests.telemetry.test_chrome_trace import pytorch_trace
from tests.telemetry.test_nsight import GEMM, nsys_export

MAPPING = str(Path(__file__).resolve().parents[2] / "packets/examples/mapping-dynamic-shapes.yaml")
COMMANDS = {
    "compare": ["telemetry", "compare", "--hardware", "a100-sxm"],
    "calibrate": ["telemetry", "calibrate", "--hardware", "a100-sxm"],
    "report": ["report", MAPPING, "--telemetry"],
}


def _cli(command: str, *files: Path, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    argv = [*COMMANDS[command], *map(str, files), *extra]
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,  # a FIFO that blocked would hang here, not pass
    )


def _one_line_error(result: subprocess.CompletedProcess, code: int, expected: str) -> None:
    err = result.stderr.strip()
    assert result.returncode == code, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert expected in err, err


def test_compare_reads_a_pytorch_trace(tmp_path: Path) -> None:
    """Was refused as if it were a table ("expected one JSON object per line ...")."""
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(pytorch_trace()))
    result = _cli("compare", path, extra=("--json",))
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["rows"] + out["implausible_rows"] == 3  # its three shaped plain GEMMs
    assert out["by_op"].keys() == {"gemm"}
    assert out["excluded_on_read"] == {"not_gemm": 8, "batched_gemm": 1}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_fifo_is_refused_in_one_line_without_blocking(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "telemetry.csv"
    os.mkfifo(fifo)
    _one_line_error(
        _cli(command, fifo), 1, f"{fifo}: is a FIFO (named pipe); telemetry must be a regular file"
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_dev_zero_is_refused_in_one_line(command: str) -> None:
    _one_line_error(_cli(command, Path("/dev/zero")), 1, "/dev/zero: is a character device")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_cpu_only_trace_is_refused_saying_so(tmp_path: Path, command: str) -> None:
    events = [e for e in pytorch_trace()["traceEvents"] if e.get("cat") != "kernel"]
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps({"traceEvents": events}))
    _one_line_error(_cli(command, path), 1, f"{path}: no device-kernel events: a CPU-only profile?")


@pytest.mark.parametrize(
    ("name", "head", "cap", "what"),
    [
        ("k.csv", b"op,dtype,m,n,k,latency_us\n", MAX_TABLE_BYTES, "table is over the 256 MiB cap"),
        ("t.json", b'{"traceEvents": [\n', MAX_TRACE_BYTES, "trace is over the 1024 MiB cap"),
    ],
)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_size_caps_are_checked_before_reading(
    tmp_path: Path, command: str, name: str, head: bytes, cap: int, what: str
) -> None:
    """A sparse file just over the cap: refused from fstat, before a byte of it is parsed."""
    path = tmp_path / name
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(cap + 1)
    _one_line_error(_cli(command, path), 1, f"{path}: {what}")


def test_request_files_are_refused_by_compare(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("arrival_ms,seq_len,core,queue_wait_ms,latency_ms\n0,128,0,0,30\n")
    _one_line_error(_cli("compare", path), 1, f"{path}: request telemetry (a seq_len column)")


def test_an_nsys_export_without_shapes_says_what_is_missing(tmp_path: Path) -> None:
    path = nsys_export(tmp_path / "p.sqlite", [(GEMM, 0, 9_000), (GEMM, 10_000, 19_000)])
    _one_line_error(
        _cli("compare", path),
        1,
        f"{path}: no kernel row the model can compare (no_shape 2): profiled GEMMs need",
    )
