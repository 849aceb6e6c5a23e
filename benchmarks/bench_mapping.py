"""Closed-loop mapping report speed: ingest and compare 1,000,000 kernel rows (target <= 3 s),
calibrate on 10,000 rows (target <= 2 s), and one whole `workbench report`.

Kernel rows: 1,000,000 draws (fixed seed) from the 28,526 rows of the three shared A100 files,
each measured time times 3% log-normal noise: repeated measurements of a fixed set of shapes, as
production telemetry of a bucketed plan is (a plan runs a few shapes many times). "Ingest" is
`read_kernel_telemetry` (parse, units, every row check, duplicates); "compare" is
`mapping_accuracy` (predict each distinct shape once, score per op, bucket and tile). A second
line times 1,000,000 rows that are nearly all distinct shapes (bench_telemetry's generator): the
worst case, where there is nothing to share.

Calibration rows: all 9,240 rows of the A100 GEMM file plus the first 760 of every 12th row of
the layer-op file (10,000 rows), read from CSV, then `calibrate` (fit on half, score the other half).

Times are the median of REPEATS runs after one warm-up run in the same process. Run:
`python -m benchmarks.bench_mapping`.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks.bench_telemetry import synthetic_kernel_rows
from benchmarks.report import argument_parser, write_section
from model.compiler.calibration import calibrate
from model.compiler.hardware import preset
from model.compiler.measured import load_measured
from model.mapping.accuracy import mapping_accuracy
from model.telemetry import KERNEL_SCHEMA, read_kernel_telemetry
from packets.examples import example_path
from packets.load import load_packet
from triage.mapping.report import report
from triage.telemetry.synthetic import write_synthetic_telemetry

ROWS = 1_000_000
SEED = 20261129
REPEATS = 3
BUCKETS = [256, 512, 1024, 2048]
A100 = preset("a100-sxm")


def _median_s(fn: Callable[[], object]) -> tuple[float, object]:
    result = fn()  # warm-up: numba, polars thread pools, page cache
    times = []
    for _ in range(REPEATS):  # repeats of one measurement, not of the work
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def repeated_shapes(rows: int, seed: int) -> pl.DataFrame:
    """`rows` draws from the shared A100 rows, measured times with 3% log-normal noise."""
    shared = pl.concat(
        [load_measured(name) for name in ("gemm", "attention", "layer_ops")], how="diagonal_relaxed"
    )
    rng = np.random.default_rng(seed)
    picked = shared[rng.integers(0, shared.height, rows)]
    noise = pl.Series(rng.lognormal(0.0, 0.03, rows))
    # Columns in the schema's order: `source` last, always set. (A CSV whose last column is
    # often empty, e.g. layer_op last, sends the reader to its slower field count: ~+1 s.)
    return picked.with_columns(latency_us=pl.col("latency_us") * noise).select(
        [c for c in KERNEL_SCHEMA if c in picked.columns]
    )


def ingest_and_compare(folder: Path) -> list[str]:
    lines = [
        "| kernel rows | format | distinct shapes | ingest s | compare s | total s | target s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, frame in (
        ("repeated shapes", repeated_shapes(ROWS, SEED)),
        ("all distinct (worst case)", synthetic_kernel_rows(ROWS, SEED)),
    ):
        for fmt in ("parquet", "csv"):
            path = folder / f"kernels.{fmt}"
            frame.write_parquet(path) if fmt == "parquet" else frame.write_csv(path)
            ingest, telemetry = _median_s(lambda path=path: read_kernel_telemetry(path))
            compare, acc = _median_s(lambda t=telemetry: mapping_accuracy(t.frame, A100, BUCKETS))
            lines.append(
                f"| {ROWS:,} {label} | {fmt} | {acc['distinct_shapes']:,} | {ingest:.2f} | "
                f"{compare:.2f} | {ingest + compare:.2f} | 3 |"
            )
    return lines


def calibration(folder: Path) -> list[str]:
    rows = pl.concat(
        [load_measured("gemm"), load_measured("layer_ops")[::12][:760]], how="diagonal_relaxed"
    )
    path = folder / "calibration.csv"
    rows.write_csv(path)

    def run():
        return calibrate(read_kernel_telemetry(path).frame, A100)

    seconds, cal = _median_s(run)
    return [
        "| rows | ingest + calibrate s | target s | held-out MdAPE (before) | fitted |",
        "|---:|---:|---:|---:|---|",
        f"| {rows.height:,} | {seconds:.2f} | 2 | {cal.heldout_mdape:.1%} "
        f"({cal.original_heldout_mdape:.1%}) | "
        + ", ".join(f"{k} {v:g}" for k, v in cal.fitted.items())
        + " |",
    ]


def whole_report(folder: Path) -> list[str]:
    """`report` on the mapping example with stand-in telemetry (triage.telemetry.synthetic)."""
    loaded = load_packet(example_path("mapping-dynamic-shapes"))
    paths = write_synthetic_telemetry(loaded, folder)
    files = [paths["requests.csv"], paths["kernels.csv"]]
    seconds, out = _median_s(lambda: report(loaded, files))
    return [
        f"Whole report (`workbench report` minus interpreter start) on the mapping example with "
        f"{out['inputs']['requests']:,} replayed requests and {out['inputs']['kernel_rows']} "
        f"kernel rows, {len(out['actions'])} actions simulated: median {seconds:.2f} s.",
    ]


def main() -> None:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        body = [
            "Ingest and compare (target <= 3 s for 1,000,000 rows):",
            "",
            *ingest_and_compare(folder),
            "",
            "Calibrate (target <= 2 s for 10,000 rows):",
            "",
            *calibration(folder),
            "",
            *whole_report(folder),
        ]
    body.append(
        f"\n1-minute load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after "
        f"(on {os.cpu_count()} CPUs): other work on the machine slows these figures."
    )
    write_section(
        "mapping",
        "Closed-loop mapping report: ingest, compare, calibrate",
        "python -m benchmarks.bench_mapping",
        "\n".join(body),
    )


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line (no arguments: `--help` says what it measures)."""
    argument_parser("benchmarks.bench_mapping", __doc__).parse_args(argv)
    main()


if __name__ == "__main__":
    cli()
