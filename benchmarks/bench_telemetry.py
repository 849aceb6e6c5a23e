"""Kernel-telemetry ingest + validation speed on 1,000,000 rows (target: ingest and compare
1,000,000 kernel rows in <= 3 s; this measures the ingest half).

Generates, from a fixed seed, a 1,000,000-row file in the shared kernel schema (mixed gemm,
attention and elementwise rows, unused shape columns empty) as CSV, Parquet and NDJSON in a
temporary folder, then times `read_kernel_telemetry` (read, parse, unit handling, every row
check, duplicate detection) on each. A CSV with quoted fields is timed too: quotes may hide
newlines, so records are located with the stdlib csv module (slower). Run:
`python -m benchmarks.bench_telemetry`.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks.report import write_section
from model.telemetry import read_kernel_telemetry

ROWS = 1_000_000
SEED = 20240501
REPEATS = 3
TARGET_S = 3.0


def synthetic_kernel_rows(rows: int, seed: int) -> pl.DataFrame:
    """`rows` plausible kernel-telemetry rows (schema of shared/data/measured), fixed seed."""
    rng = np.random.default_rng(seed)
    op = rng.choice(
        ["gemm", "attention_prefill", "attention_decode", "elementwise"],
        rows,
        p=[0.5, 0.1, 0.2, 0.2],
    )
    pow2 = lambda lo, hi: 2 ** rng.integers(lo, hi, rows)  # noqa: E731
    frame = pl.DataFrame(
        {
            "op": op,
            "dtype": rng.choice(["bf16", "fp16"], rows),
            "m": rng.integers(1, 8193, rows),
            "n": pow2(5, 15),
            "k": pow2(5, 15),
            "batch": pow2(0, 9),
            "q_len": pow2(0, 14),
            "kv_len": pow2(6, 15),
            "heads": np.full(rows, 32),
            "kv_heads": pow2(0, 6),
            "head_dim": np.full(rows, 128),
            "kind": rng.choice(["rmsnorm", "rope", "silu_mul", "add"], rows),
            "rows": rng.integers(1, 8193, rows),
            "cols": pow2(10, 15),
            "latency_us": np.round(rng.lognormal(3.5, 1.5, rows) + 2.5, 4),
            "hardware": np.full(rows, "a100-sxm"),
            "source": np.full(rows, "bench synthetic"),
        }
    )
    is_op = {name: pl.col("op") == name for name in ("gemm", "elementwise")}
    attention = pl.col("op").str.starts_with("attention")
    return frame.with_columns(
        *[pl.when(is_op["gemm"]).then(pl.col(c)).alias(c) for c in ("m", "n", "k")],
        *[
            pl.when(attention).then(pl.col(c)).alias(c)
            for c in ("batch", "kv_len", "heads", "kv_heads", "head_dim")
        ],
        *[pl.when(is_op["elementwise"]).then(pl.col(c)).alias(c) for c in ("kind", "rows", "cols")],
        q_len=pl.when(pl.col("op") == "attention_decode")
        .then(1)
        .when(attention)
        .then(pl.col("kv_len")),
    )


def time_ingest(path: Path) -> tuple[list[float], int, dict[str, int]]:
    """Wall times (s) of 1 + REPEATS reads (the first one cold), rows kept, exclusion counts."""
    times: list[float] = []
    kept, counts = 0, {}
    for _ in range(1 + REPEATS):  # repeats of one measurement, not of the work
        start = time.perf_counter()
        tel = read_kernel_telemetry(path)
        times.append(time.perf_counter() - start)
        kept, counts = tel.frame.height, tel.report.counts
    return times, kept, counts


def main() -> None:
    frame = synthetic_kernel_rows(ROWS, SEED)
    load_before = os.getloadavg()[0]
    lines = [
        f"{ROWS:,} synthetic kernel rows (seed {SEED}); per format one cold read (the first "
        f"after writing the file) then {REPEATS} more; target <= {TARGET_S:g} s for "
        "ingest + compare (this is the ingest half).",
        "",
        "| format | file MB | cold s | median s | fastest s | rows/s (median) | rows kept "
        "| exclusions |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    with tempfile.TemporaryDirectory() as folder:
        quoted = frame.with_columns(source=pl.lit("bench, synthetic"))  # a comma forces quotes
        for label, fmt, write in (
            ("csv", "csv", frame.write_csv),
            ("csv, quoted fields", "csv", quoted.write_csv),
            ("parquet", "parquet", frame.write_parquet),
            ("ndjson", "ndjson", frame.write_ndjson),
        ):
            path = Path(folder) / f"kernels.{fmt}"
            write(path)
            times, kept, counts = time_ingest(path)
            seconds = statistics.median(times[1:])
            size_mb = path.stat().st_size / 1e6
            lines.append(
                f"| {label} | {size_mb:.1f} | {times[0]:.2f} | {seconds:.2f} | {min(times):.2f} | "
                f"{ROWS / seconds:,.0f} | {kept:,} | {counts or 'none'} |"
            )
    lines.append(
        f"\n1-minute load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after "
        f"(on {os.cpu_count()} CPUs): other work on the machine slows these figures."
    )
    write_section(
        "telemetry",
        "Telemetry ingest: 1,000,000 kernel rows",
        "python -m benchmarks.bench_telemetry",
        "\n".join(lines),
    )


if __name__ == "__main__":
    main()
