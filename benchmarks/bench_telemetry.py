"""Kernel-telemetry ingest + validation speed on 1,000,000 rows (target: ingest and compare
1,000,000 kernel rows in <= 3 s; this measures the ingest half).

Generates, from a fixed seed, a 1,000,000-row file in the shared kernel schema (mixed gemm,
attention and elementwise rows, unused shape columns empty) as CSV, Parquet and NDJSON in a
temporary folder, then times `read_kernel_telemetry` (read, parse, unit handling, every row
check, duplicate detection) on each. A CSV with quoted fields is timed too: quotes may hide
newlines, so records are located with the stdlib csv module (slower). Then a 250 MB
PyTorch-shaped Chrome trace goes through `workbench report` in a child process whose peak RSS
is measured (target < 1.5 GB). Run: `python -m benchmarks.bench_telemetry` (both) or
`python -m benchmarks.bench_telemetry trace` (the trace only).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks.report import argument_parser, write_section
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


def ingest_main() -> None:
    """1,000,000 kernel rows through `read_kernel_telemetry`, per format."""
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


TRACE_MB = 250
TRACE_RSS_TARGET_GB = 1.5
TRACE_KERNELS = (
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", "aten::mm"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4> >", None),
    ("void vllm::rms_norm_kernel<c10::BFloat16, 8, 3>(c10::BFloat16*, long)", None),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add>", None),
)


def write_synthetic_trace(path: Path, megabytes: int, seed: int) -> int:
    """A PyTorch-profiler-shaped Chrome trace of about `megabytes` MB: per launch a python
    function, a CPU op (with External id and Input Dims), a cudaLaunchKernel and the kernel,
    one event per line as Kineto writes them. Returns the number of kernel events."""
    rng = np.random.default_rng(seed)
    target = megabytes * 1_000_000
    kernels, ts, written = 0, 0, 0
    with path.open("w", encoding="utf-8") as out:
        head = '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n'
        out.write(head)
        written += len(head)
        meta = (
            '{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python3"}},\n'
            '{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "GPU 0"}},\n'
        )
        out.write(meta)
        written += len(meta)
        while written < target:
            block = []
            for _ in range(1000):  # a block of launches per write
                name, cpu = TRACE_KERNELS[kernels % len(TRACE_KERNELS)]
                m, n, k = (int(x) for x in 2 ** rng.integers(4, 13, 3))
                dur = float(rng.lognormal(3.0, 1.0)) + 2.5
                eid = kernels + 1
                block.append(
                    f'{{"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_{eid}", '
                    f'"pid": 0, "tid": 7, "ts": {ts}, "dur": {dur + 20:.3f}, "args": '
                    f'{{"Python id": {eid}, "Python parent id": {eid - 1}}}}},\n'
                    f'{{"ph": "X", "cat": "cpu_op", "name": "{cpu or "aten::add"}", "pid": 0, '
                    f'"tid": 7, "ts": {ts + 1}, "dur": 15.2, "args": {{"External id": {eid}, '
                    f'"Input Dims": [[{m}, {k}], [{k}, {n}]], "Input type": ["c10::BFloat16", '
                    f'"c10::BFloat16"], "Sequence number": {eid}, "Fwd thread id": 0}}}},\n'
                    f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0, '
                    f'"tid": 7, "ts": {ts + 2}, "dur": 4.1, "args": {{"External id": {eid}, '
                    f'"cbid": 211, "correlation": {eid}}}}},\n'
                    f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 1, "tid": 7, '
                    f'"ts": {ts + 5}, "dur": {dur:.3f}, "args": {{"External id": {eid}, '
                    f'"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": {eid}, '
                    f'"registers per thread": 128, "shared memory": 49152, "blocks per SM": 0.5,'
                    f' "warps per SM": 2.0, "grid": [{n // 64}, {m // 64 + 1}, 1], '
                    f'"block": [128, 1, 1], "est. achieved occupancy %": 6}}}},\n'
                )
                kernels += 1
                ts += int(dur) + 30
            text = "".join(block)
            out.write(text)
            written += len(text)
        out.write(f'{{"ph": "i", "name": "end", "pid": 0, "tid": 7, "ts": {ts}, "s": "t"}}\n]}}\n')
    return kernels


def peak_rss_of(command: list[str]) -> tuple[float, float, float]:
    """Run `command` in a child process: (peak RSS in GB, wall seconds, CPU seconds)."""
    start = time.perf_counter()
    child = subprocess.run(command, capture_output=True, check=False)
    wall = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(child.stderr.decode(errors="replace")[-2000:])
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # Linux: ru_maxrss in kilobytes
    return usage.ru_maxrss / 1e6, wall, usage.ru_utime + usage.ru_stime


def trace_main() -> None:
    """A 250 MB PyTorch-shaped trace through `workbench report`: peak RSS of the process."""
    packet = Path(__file__).resolve().parents[1] / "packets/examples/mapping-dynamic-shapes.yaml"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        kernels = write_synthetic_trace(path, TRACE_MB, SEED)
        size_mb = path.stat().st_size / 1e6
        load_before = os.getloadavg()[0]
        command = [sys.executable, "-m", "workbench", "report", str(packet), "--telemetry",
                   str(path), "--json"]  # fmt: skip
        peak_gb, wall, cpu = peak_rss_of(command)
    body = (
        f"A synthetic PyTorch-profiler trace (seed {SEED}) of {size_mb:.0f} MB: {kernels:,} "
        "kernels, each with its python function, CPU op (Input Dims) and cudaLaunchKernel "
        "events, one event per line. `workbench report` on it, in a child process; target "
        f"peak RSS < {TRACE_RSS_TARGET_GB:g} GB.\n\n"
        "| trace MB | kernels | peak RSS GB | wall s | CPU s |\n|---:|---:|---:|---:|---:|\n"
        f"| {size_mb:.0f} | {kernels:,} | {peak_gb:.2f} | {wall:.1f} | {cpu:.1f} |\n\n"
        f"1-minute load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after "
        f"(on {os.cpu_count()} CPUs): wall time follows the load, CPU time and peak RSS much "
        "less."
    )
    write_section(
        "telemetry-trace",
        f"Telemetry: a {TRACE_MB} MB Chrome trace through report (peak RSS)",
        "python -m benchmarks.bench_telemetry trace",
        body,
    )


def main() -> None:
    """Both benchmarks (what `make bench` runs)."""
    ingest_main()
    trace_main()


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line: the kernel-telemetry ingest, or (`trace`) the trace's."""
    parser = argument_parser("benchmarks.bench_telemetry", __doc__)
    parser.add_argument("part", nargs="?", choices=["trace"], help="only the trace ingest")
    if parser.parse_args(argv).part == "trace":
        trace_main()
    else:
        main()


if __name__ == "__main__":
    cli()
