"""`workbench sweep PACKET --set PATH=V1,V2 ...`: run a grid of edits, one row per point."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import polars as pl

from packets.errors import UsageError
from packets.load import load_packet
from workbench.core.cluster import add_scheduler_option, engine

TABLE_COLUMNS = (
    "latency_p99_ms",
    "latency_p95_ms",
    "latency_p50_ms",
    "latency_mean_ms",
    "throughput_per_s",
    "utilization_mean",
    "fallback_rate",
    "hbm_peak_demand_ratio",
    "p99_ok",
)
SERVING_TABLE_COLUMNS = (
    "ttft_p95_ms",
    "ttft_p99_ms",
    "tpot_p95_ms",
    "tpot_p99_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "tokens_per_s",
    "throughput_per_s",
    "preemptions",
    "ttft_p95_ok",
    "tpot_p95_ok",
    "p95_ok",
    "p99_ok",
)
"""A serving packet's points (continuous scheduler): TTFT and TPOT tails first."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a grid of --set edits",
        description="Run the cartesian grid of --set values (a configuration knob such as "
        "batch_policy.max_batch or placement, or a packet field such as "
        "inputs.workload.arrivals.rate_per_s) and print one row per point. A serving packet's "
        "points run the continuous scheduler (knobs batch_policy.max_num_seqs, "
        "max_num_batched_tokens, chunked_prefill, kv_cache_tokens): TTFT, TPOT and latency "
        "tails, tokens/s, preemptions and the serving SLA per point.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument(
        "--set", dest="sets", action="append", required=True, metavar="PATH=V1,V2",
        help="an axis of the grid; repeat for more axes (values are YAML: 4, round-robin, [256, 512])",
    )  # fmt: skip
    p.add_argument("--candidate", metavar="NAME", help="sweep a candidate (default: baseline)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON object per point")
    out.add_argument("--csv", action="store_true", help="CSV with every column")
    p.add_argument(
        "--parquet", type=Path, metavar="OUT",
        help="also write every column to a Parquet file (written whole, atomically)",
    )  # fmt: skip
    add_scheduler_option(p)
    add_quiet_option(p)
    p.set_defaults(run=run)


def add_quiet_option(p: argparse.ArgumentParser) -> None:
    """`--quiet`: no progress bar on stderr."""
    p.add_argument("--quiet", action="store_true", help="no progress bar on stderr")


def write_parquet(frame: pl.DataFrame, path: Path) -> None:
    """The whole table as Parquet, replaced atomically (atomic_write: UsageError on failure)."""
    import io

    from packets.files import atomic_write

    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    atomic_write(path, buffer.getvalue())


def run(args: argparse.Namespace) -> int:
    from triage.sweeps import parse_axis, run_grid
    from workbench.core.progress import progress_bar

    loaded = load_packet(args.packet)
    axes = [parse_axis(text) for text in args.sets]
    with engine(args.scheduler) as where, progress_bar("sweep", args.quiet) as progress:
        try:
            frame = run_grid(
                loaded, args.candidate, axes, where.executor,
                parallelism=where.parallelism, progress=progress,
            )  # fmt: skip
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
    if args.parquet is not None:
        write_parquet(frame, args.parquet)
    if args.csv:
        sys.stdout.write(frame.write_csv())
    elif args.json:
        print(json.dumps(frame.to_dicts(), indent=2, allow_nan=False))
    else:
        labels = [a.path for a in axes]
        serving = "ttft_p95_ms" in frame.columns
        columns = SERVING_TABLE_COLUMNS if serving else TABLE_COLUMNS
        shown = frame.select([*labels, *[c for c in columns if c in frame.columns]])
        print(_table(shown.to_dicts(), shown.columns))
    return 0


def _table(rows: list[dict], columns: list[str]) -> str:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
        return str(value)

    cells = [[cell(r[c]) for c in columns] for r in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    head = "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))
    body = ["  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join([head, *body])
