"""Nsight Systems SQLite exports and Nsight Compute raw CSVs: device kernels, names -> ops.

The fixtures are built here to NVIDIA's documented layouts: the `nsys export --type sqlite`
tables (`StringIds(id, value)`; `CUPTI_ACTIVITY_KIND_KERNEL` with start/end in ns,
gridX/Y/Z, blockX/Y/Z, streamId, globalPid, and demangledName/shortName as StringIds ids, per
the "SQLite Export Schema Reference") and `ncu --csv --page raw` (a header row from "ID",
"Process ID", "Process Name", "Host Name", "Kernel Name", then a units row, then one row per
kernel with metric columns such as gpu__time_duration.sum).
"""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import pytest

from model.telemetry import TelemetryError, read_ncu_csv, read_nsys_sqlite

GEMM = "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(Params)"
FLASH = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4> >(Flash_fwd_params)"
RMS = "void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, c10::BFloat16 const*, long)"
OTHER = "void my_custom_reduce<float>(float*, int)"

KERNEL_COLUMNS = (
    "start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL, "
    "streamId INT NOT NULL, correlationId INT, globalPid INT, demangledName INT NOT NULL, "
    "shortName INT NOT NULL, mangledName INT, launchType INT, cacheConfig INT, "
    "registersPerThread INT NOT NULL, gridX INT NOT NULL, gridY INT NOT NULL, gridZ INT NOT NULL, "
    "blockX INT NOT NULL, blockY INT NOT NULL, blockZ INT NOT NULL, staticSharedMemory INT NOT NULL, "
    "dynamicSharedMemory INT NOT NULL, localMemoryPerThread INT NOT NULL"
)


def nsys_export(path: Path, kernels: list[tuple[str, int, int]], *, table: bool = True) -> Path:
    """An `nsys export --type sqlite` file holding `kernels` as (demangled name, start ns, end
    ns); shortName points at a short form of the name."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT NOT NULL, end INT NOT NULL, "
        "eventClass INT NOT NULL, globalTid INT, correlationId INT, nameId INT NOT NULL)"
    )
    if table:
        conn.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({KERNEL_COLUMNS})")
    ids: dict[str, int] = {}
    for i, (name, start, end) in enumerate(kernels):
        for text in (name, name.split("<")[0].removeprefix("void ")):
            if text not in ids:
                ids[text] = len(ids) + 1
                conn.execute("INSERT INTO StringIds VALUES (?, ?)", (ids[text], text))
        short = ids[name.split("<")[0].removeprefix("void ")]
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
            "(?, ?, 0, 1, 7, ?, 3245, ?, ?, NULL, 0, 0, 128, 108, 2, 1, 256, 1, 1, 0, 49152, 0)",
            (start, end, i + 1, ids[name], short),
        )
    conn.commit()
    conn.close()
    return path


def test_nsys_kernels_are_read_with_names_ops_and_launch(tmp_path: Path) -> None:
    path = nsys_export(
        tmp_path / "p.sqlite",
        [
            (FLASH, 2_000, 9_500),
            (GEMM, 1_000, 21_000),
            (RMS, 30_000, 33_000),
            (OTHER, 40_000, 40_000),
        ],
    )
    trace = read_nsys_sqlite(path)
    rows = trace.kernels.select("event", "name", "op", "kind", "ts_us", "dur_us").rows()
    assert rows == [
        (0, GEMM, "gemm", None, 1.0, 20.0),  # in start order, ns -> us
        (1, FLASH, "attention", None, 2.0, 7.5),
        (2, RMS, "elementwise", "rmsnorm", 30.0, 3.0),
    ]
    assert trace.report.counts == {"nonpositive_duration": 1}  # end == start
    first = trace.kernels.row(0, named=True)
    assert (first["grid"], first["block"], first["stream"]) == ([108, 2, 1], [256, 1, 1], 7)
    assert trace.where(2) == f"{path}: row 2"
    assert trace.report.exclusions[0].examples[0].row == 3


def test_nsys_is_opened_read_only(tmp_path: Path) -> None:
    path = nsys_export(tmp_path / "p.sqlite", [(GEMM, 0, 5_000)])
    path.chmod(0o444)
    before = path.read_bytes()
    read_nsys_sqlite(path)
    assert path.read_bytes() == before
    assert not (tmp_path / "p.sqlite-journal").exists()
    assert not (tmp_path / "p.sqlite-wal").exists()


def test_nsys_without_kernels_says_cpu_only(tmp_path: Path) -> None:
    path = nsys_export(tmp_path / "cpu.sqlite", [], table=False)
    with pytest.raises(TelemetryError) as caught:
        read_nsys_sqlite(path)
    assert str(caught.value) == (
        f"{path}: no CUPTI_ACTIVITY_KIND_KERNEL table: no device kernels recorded (a CPU-only "
        "profile? profile with nsys profile --trace=cuda)"
    )


def test_nsys_row_cap(tmp_path: Path) -> None:
    path = nsys_export(
        tmp_path / "p.sqlite", [(GEMM, i * 10_000, i * 10_000 + 5_000) for i in range(4)]
    )
    assert read_nsys_sqlite(path, max_kernels=4).kernels.height == 4
    with pytest.raises(TelemetryError, match=r"more than 3 kernels \(the row cap\)"):
        read_nsys_sqlite(path, max_kernels=3)


def test_not_a_database_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    with pytest.raises(TelemetryError) as caught:
        read_nsys_sqlite(path)
    assert str(caught.value).startswith(f"{path}: cannot read the SQLite export: ")
    assert "\n" not in str(caught.value)


NCU_HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
              "Block Size", "Grid Size", "Device", "CC", "dram__bytes_read.sum",
              "gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]  # fmt: skip


def ncu_csv(rows: list[tuple[str, str]], unit: str = "usecond", preamble: str = "") -> str:
    """`ncu --csv --page raw` text: kernels as (name, gpu__time_duration.sum as printed)."""
    out = io.StringIO()
    out.write(preamble)
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(NCU_HEADER)
    writer.writerow(["", "", "", "", "", "", "", "", "", "", "", "Mbyte", unit, "%"])
    for i, (name, time) in enumerate(rows):
        writer.writerow([i, 4242, "python3", "node1", name, 1, 7, "(128, 1, 1)", "(64, 32, 1)", 0,
                         "8.0", "12.58", time, "71.2"])  # fmt: skip
    return out.getvalue()


def test_ncu_raw_csv_with_units_and_thousands(write) -> None:
    text = ncu_csv(
        [(GEMM, "1,234.5"), (FLASH, "17.25"), (OTHER, "n/a")],
        unit="nsecond",
        preamble="==PROF== Connected to process 4242 (/usr/bin/python3)\n",
    )
    path = write("k.csv", text)
    trace = read_ncu_csv(path)
    rows = trace.kernels.select("event", "op", "dur_us", "grid", "block").rows()
    assert rows == [
        (4, "gemm", pytest.approx(1.2345), [64, 32, 1], [128, 1, 1]),
        (5, "attention", pytest.approx(0.01725), [64, 32, 1], [128, 1, 1]),
    ]
    assert trace.report.counts == {"missing_duration": 1}
    assert str(trace.report.exclusions[0].examples[0]) == (
        f"{path}:6: gpu__time_duration.sum: not a number ('n/a')"
    )
    assert trace.where(4) == f"{path}:4"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a,b\n1,2\n", ': no Nsight Compute header row ("ID","Process ID",...,"Kernel Name")'),
        (
            ncu_csv([(GEMM, "3")]).replace("gpu__time_duration.sum", "gpu__cycles"),
            ":1: no gpu__time_duration.sum column (profile with ncu --metrics gpu__time_duration.sum)",
        ),
        (
            ncu_csv([(GEMM, "3")], unit="cycle"),
            ":2: gpu__time_duration.sum: no units row after the header "
            "(expected nsecond/usecond/msecond/second)",
        ),
    ],
)
def test_ncu_errors_name_the_line(text: str, expected: str, write) -> None:
    path = write("k.csv", text)
    with pytest.raises(TelemetryError) as caught:
        read_ncu_csv(path)
    assert str(caught.value) == f"{path}{expected}"
