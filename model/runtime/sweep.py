"""Run a grid of runtime configurations and tabulate their headline figures (polars).

The engine behind `workbench sweep`: the CLI parses `--set` into configurations; this runs them.
Configurations that share workload, service and seed share one drawn request stream; runs go
to a thread pool, and the numba kernel releases the GIL, so a 2-core machine runs two at once.
(numpy could vectorize the loop across configurations only by stepping all of them request by
request in lock-step, which is slower than the compiled loop per configuration.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import polars as pl

from model.runtime.inputs import RuntimeConfig
from model.runtime.simulate import simulate
from model.runtime.stats import SCALARS, headline
from model.runtime.workload import RequestStream, generate_requests
from model.service import ServiceTable

COLUMNS = {
    "latency_mean_ms": ("latency_ms", "mean"),
    "latency_p50_ms": ("latency_ms", "p50"),
    "latency_p95_ms": ("latency_ms", "p95"),
    "latency_p99_ms": ("latency_ms", "p99"),
    "latency_max_ms": ("latency_ms", "max"),
    "queue_wait_mean_ms": ("queue_wait_ms", "mean"),
    "queue_wait_p99_ms": ("queue_wait_ms", "p99"),
    "service_mean_ms": ("service_ms", "mean"),
    "p95_ok": ("sla", "p95_ok"),
    "p99_ok": ("sla", "p99_ok"),
    "throughput_ok": ("sla", "throughput_ok"),
}


def _stream_key(cfg: RuntimeConfig) -> tuple:
    trace = cfg.workload.arrivals.trace_ms
    return (cfg.workload, cfg.service, cfg.seed, id(trace))


def headline_row(summary: dict) -> dict:
    """Flatten a run's headline dict into one table row (ms, per s, ratios)."""
    row = {name: summary[name] for name in SCALARS}
    row.update({name: summary[a][b] for name, (a, b) in COLUMNS.items()})
    util = summary["core_utilization"]
    row["utilization_mean"] = sum(util) / len(util)
    row["utilization_max"] = max(util)
    return row


def run_sweep(
    configs: Sequence[RuntimeConfig],
    tables: Sequence[ServiceTable | None] | None = None,
    labels: Sequence[Mapping[str, object]] | None = None,
    *,
    workers: int | None = None,
) -> pl.DataFrame:
    """Simulate every configuration and return one row of headline figures per configuration.

    Args:
        configs: the grid, in the order rows should appear.
        tables: service table per configuration (None entries for pinned distributions).
        labels: per configuration, columns to put first (e.g. {"placement": "round-robin"}).
        workers: threads (default: CPU count).
    Rows are deterministic: each depends only on its configuration and seed.
    """
    n = len(configs)
    tables = list(tables) if tables is not None else [None] * n
    labels = list(labels) if labels is not None else [{} for _ in range(n)]
    if len(tables) != n or len(labels) != n:
        raise ValueError("run_sweep needs one table and one label set per configuration")
    streams: dict[tuple, RequestStream] = {}
    for cfg in configs:  # draw each distinct request stream once, in grid order
        key = _stream_key(cfg)
        if key not in streams:
            streams[key] = generate_requests(cfg.workload, cfg.service, cfg.seed)

    def one(i: int) -> dict:
        result = simulate(configs[i], tables[i], stream=streams[_stream_key(configs[i])])
        return {**labels[i], **headline_row(headline(result))}

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        rows = list(pool.map(one, range(n)))
    return pl.DataFrame(rows, infer_schema_length=None)
