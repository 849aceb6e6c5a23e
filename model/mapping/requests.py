"""Request telemetry in the mapping loop: the observed shape mix, replaying observed requests
through the simulator, and the simulator's own requests written out as telemetry.

Real request telemetry (arrival, seq_len, core, queue wait, latency per request; read by
`model.telemetry.read_request_telemetry`) is what the report is for. `simulated_request_rows`
writes a simulated run in the same columns so tests and demos have realistic telemetry without a
production system; real telemetry replaces it one for one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from model.mapping.buckets import FALLBACK, bucket_entry, bucket_index
from model.runtime.simulate import RuntimeResult
from model.runtime.stats import measured
from model.runtime.workload import RequestStream

MAX_MIX_SHAPES = 256
"""Most distinct seq_len values the simulated mix keeps; beyond it lengths are rounded up (see
`observed_mix`). Each value is a service-table column and a candidate bucket."""


@dataclass(frozen=True)
class ObservedMix:
    """The shape mix of observed requests.

    Attributes:
        seq_len: (N,) int64 each request's seq_len as simulated (rounded up to a multiple of
            `quantum` tokens when there were more than MAX_MIX_SHAPES distinct values).
        values: (S,) int64 ascending distinct seq_len values.
        weights: (S,) float64 share of requests at each value (sums to 1).
        quantum: rounding step, tokens (1: lengths kept as observed).
    """

    seq_len: np.ndarray
    values: np.ndarray
    weights: np.ndarray
    quantum: int


def observed_mix(seq_len: np.ndarray, granule: int = 16) -> ObservedMix:
    """The mix of observed lengths; with more than MAX_MIX_SHAPES distinct values each length
    is rounded up to a multiple of granule x 2^j tokens, the smallest step that leaves at most
    MAX_MIX_SHAPES values (a tile pads at least to the granule anyway)."""
    lengths = np.asarray(seq_len, dtype=np.int64)
    if len(lengths) == 0:
        raise ValueError("request telemetry has no requests")
    quantum = 1
    while len(np.unique(-(-lengths // quantum))) > MAX_MIX_SHAPES:  # at most ~log2(max) steps
        quantum = granule if quantum == 1 else quantum * 2
    rounded = -(-lengths // quantum) * quantum
    values, counts = np.unique(rounded, return_counts=True)
    return ObservedMix(rounded, values, counts / counts.sum(), quantum)


def replay_stream(arrival_ms: np.ndarray, seq_len: np.ndarray, seed: int) -> RequestStream:
    """A request stream that replays observed arrivals (rebased to start at 0 ms) and shapes,
    request i of the telemetry being request i of the stream (arrivals must not decrease: the
    request reader sorts them)."""
    arrival = np.asarray(arrival_ms, dtype=np.float64)
    if len(arrival) == 0 or np.any(np.diff(arrival) < 0):
        raise ValueError("replayed requests must be non-empty and sorted by arrival")
    return RequestStream(
        arrival_ms=arrival - arrival[0],
        seq_len=np.asarray(seq_len, dtype=np.int64),
        service_draw_ms=np.zeros(len(arrival)),
        seed=int(seed),
    )


def simulated_request_rows(result: RuntimeResult) -> pl.DataFrame:
    """A simulated run's requests as request telemetry (REQUEST_SCHEMA columns: arrival_ms,
    seq_len, core, queue_wait_ms, latency_ms), warm-up included, in arrival order."""
    req = result.requests
    return pl.DataFrame(
        {
            "arrival_ms": req.arrival_ms,
            "seq_len": req.seq_len.astype(np.int64),
            "core": req.core.astype(np.int64),
            "queue_wait_ms": req.queue_wait_ms,
            "latency_ms": req.finish_ms - req.arrival_ms,
        }
    )


def latency_by_bucket(
    latency_ms: np.ndarray, seq_len: np.ndarray, compiled_shapes: Sequence[int]
) -> pl.DataFrame:
    """Requests, mean, p95 and p99 latency (ms) per compiled bucket of their seq_len."""
    frame = pl.DataFrame(
        {
            "bucket": bucket_index(compiled_shapes, np.asarray(seq_len, np.float64)),
            "latency": np.asarray(latency_ms, dtype=np.float64),
        }
    )
    return (
        frame.group_by("bucket")
        .agg(
            requests=pl.len(),
            mean_ms=pl.col("latency").mean(),
            p95_ms=pl.col("latency").quantile(0.95, interpolation="linear"),
            p99_ms=pl.col("latency").quantile(0.99, interpolation="linear"),
        )
        .sort(pl.when(pl.col("bucket") == FALLBACK).then(10**9).otherwise(pl.col("bucket")))
    )


def observed_vs_simulated(
    observed_ms: np.ndarray,
    result: RuntimeResult,
    compiled_shapes: Sequence[int],
) -> dict:
    """Observed request latency against the simulation of the same replayed requests, after
    the warm-up: overall p50/p95/p99 and per bucket; `ratio` = simulated / observed."""
    m = measured(result)
    req = result.requests
    simulated = (req.finish_ms - req.arrival_ms)[m]
    observed = np.asarray(observed_ms, dtype=np.float64)[m]
    seq = req.seq_len[m]
    ps = {"p50": 50.0, "p95": 95.0, "p99": 99.0}
    overall = {}
    for name, q in ps.items():
        o, s = float(np.percentile(observed, q)), float(np.percentile(simulated, q))
        overall[name] = {"observed_ms": o, "simulated_ms": s, "ratio": s / o if o > 0 else None}
    obs = latency_by_bucket(observed, seq, compiled_shapes)
    sim = latency_by_bucket(simulated, seq, compiled_shapes)
    joined = obs.join(sim, on="bucket", suffix="_sim", maintain_order="left")
    by_bucket = [
        {
            **bucket_entry(compiled_shapes, r["bucket"]),
            "requests": r["requests"],
            "observed_p99_ms": r["p99_ms"],
            "simulated_p99_ms": r["p99_ms_sim"],
            "observed_mean_ms": r["mean_ms"],
            "simulated_mean_ms": r["mean_ms_sim"],
        }
        for r in joined.iter_rows(named=True)
    ]
    return {"requests": len(observed), **overall, "by_bucket": by_bucket}
