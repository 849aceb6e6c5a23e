"""Serving sweeps: a grid of continuous-batching knobs on the `llm-serving-continuous` example.

Run: `python -m benchmarks.bench_serving_sweep` (writes the `serving-sweep` section of
BENCHMARKS.md). The grid (chunked prefill on, four token budgets, two arrival rates: 8 points of
20,000 requests) runs through the work units `workbench sweep` uses (triage/workunits.py) on
the local thread pool at 1 and 2 threads; the rows must be identical (determinism), and the CPU
per point sizes chunks (triage/workunits.py SERVING_SECONDS_PER_REQUEST).
"""

from __future__ import annotations

import os
import resource
import time

from benchmarks.report import argument_parser, write_section
from packets.examples import example_path
from packets.load import load_packet
from triage.review.matrix import MatrixSpec, run_matrix
from triage.sweeps import parse_axis, run_grid
from triage.workunits import SERVING_SECONDS_PER_REQUEST

COMMAND = "python -m benchmarks.bench_serving_sweep"
AXES = (
    "batch_policy.chunked_prefill=true",
    "batch_policy.max_num_batched_tokens=512,768,2048,8192",
    "inputs.workload.arrivals.rate_per_s=10,13",
)


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    loaded = load_packet(example_path("llm-serving-continuous"))
    axes = [parse_axis(text) for text in AXES]
    warm = [*axes[:1], parse_axis("inputs.workload.requests=500")]
    run_grid(loaded, None, warm, parallelism=1)
    rows, lines = {}, []
    for threads in (1, 2):
        wall, cpu = time.perf_counter(), _cpu_s()
        frame = run_grid(loaded, None, axes, parallelism=threads)
        wall, cpu = time.perf_counter() - wall, _cpu_s() - cpu
        rows[threads] = frame
        points = frame.height
        lines.append(
            f"| {threads} | {points} | {wall:.2f} s | {cpu / points:.2f} s "
            f"({cpu / points / 20000 * 1e6:.0f} us per request) |"
        )
    same = rows[1].equals(rows[2])
    wall, cpu = time.perf_counter(), _cpu_s()
    matrix = run_matrix(loaded, "chunked-prefill-768", MatrixSpec())
    wall, cpu = time.perf_counter() - wall, _cpu_s() - cpu
    cells = len(matrix.cells)
    load = os.getloadavg()
    body = [
        "Grid: " + ", ".join(f"`--set {a}`" for a in AXES) + " (8 points, 20,000 requests each),",
        "through `run_grid` (the work units of `workbench sweep`, serving points on the continuous",
        "scheduler), after one warm-up point.",
        "",
        "| threads | points | wall | CPU per point |",
        "|---:|---:|---:|---:|",
        *lines,
        "",
        f"The default validation matrix for `chunked-prefill-768` (3 loads x 2 prompt mixes x 3 "
        f"seeds x 2 configurations = {cells} cells of 20,000 requests, 2 threads): {wall:.1f} s "
        f"wall, {cpu / cells:.2f} s CPU per cell.",
        "",
        f"Rows identical at 1 and 2 threads: {'yes' if same else 'NO'}. Chunk sizing assumes "
        f"{SERVING_SECONDS_PER_REQUEST * 1e6:.0f} us per request "
        "(triage/workunits.py SERVING_SECONDS_PER_REQUEST).",
        f"Load average after the run (`uptime`): {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}.",
    ]
    write_section("serving-sweep", "Serving sweeps (continuous scheduler)", COMMAND,
                  "\n".join(body))  # fmt: skip


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line (no arguments: `--help` says what it measures)."""
    argument_parser("benchmarks.bench_serving_sweep", __doc__).parse_args(argv)
    main()


if __name__ == "__main__":
    cli()
