"""Runtime adaptation gain: one request stream through two mappings, tail and throughput.

Every configuration is simulated on the same request stream (same arrivals, same shapes: the
observed telemetry replayed, or the packet's draws from its seed), so differences come from the
mapping alone. Figures per run (`run_figures`): latency p50/p95/p99/mean (ms), throughput at
the offered load (completions/s), capacity (completions/s when every request is queued at
once: the service rate of the configuration under its batching and placement), fallback rate,
and padding (the share of executed tokens that are padding up to a bucket).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from model.runtime.inputs import RuntimeConfig
from model.runtime.simulate import RuntimeResult, simulate
from model.runtime.stats import describe_ms, measured, throughput_per_s
from model.runtime.workload import RequestStream
from model.service import ServiceTable


def padding_fraction(result: RuntimeResult, table: ServiceTable) -> float:
    """Share of the tokens executed by measured requests' batches that are padding: a batch
    runs size x its compiled shape (its largest request's bucket, or its own shape on the
    generic path) tokens for the sum of its requests' seq_len."""
    req, b = result.requests, result.batches
    executed = b.size * table.compiled_shape[table.shape_index(b.seq_len)]
    useful = np.bincount(req.batch, weights=req.seq_len, minlength=len(b.size))
    used = np.unique(req.batch[measured(result)])
    total = float(np.sum(executed[used]))
    return float(1.0 - np.sum(useful[used]) / total) if total > 0 else 0.0


def saturation_stream(stream: RequestStream) -> RequestStream:
    """The same requests, all queued at time 0 (the capacity run)."""
    return dataclasses.replace(stream, arrival_ms=np.zeros_like(stream.arrival_ms))


def run_figures(
    config: RuntimeConfig, table: ServiceTable, stream: RequestStream, *, capacity: bool = True
) -> dict:
    """Simulate `config` on `stream` and return its figures (module docstring); with
    `capacity`, a second run with every request queued at once measures the service rate."""
    result = simulate(config, table, stream=stream)
    m = measured(result)
    req = result.requests
    figures = {
        "latency_ms": describe_ms(req.finish_ms[m] - req.arrival_ms[m]),
        "queue_wait_ms": describe_ms(req.queue_wait_ms[m]),
        "throughput_per_s": throughput_per_s(result),
        "capacity_per_s": None,
        "fallback_rate": float(np.mean(req.fallback[m])),
        "padding_fraction": padding_fraction(result, table),
    }
    if capacity:
        saturated = simulate(config, table, stream=saturation_stream(stream))
        figures["capacity_per_s"] = throughput_per_s(saturated)
    return figures


def gain(before: dict, after: dict) -> dict:
    """What going from `before` to `after` gains (run_figures dicts): p95/p99 reduction in ms
    and as a fraction of before (positive = faster), throughput and capacity increase
    (completions/s and fraction), fallback-rate and padding reduction."""

    def fraction(saved: float, base: float | None) -> float | None:
        return saved / base if base else None

    out = {}
    for p in ("p95", "p99"):
        saved = before["latency_ms"][p] - after["latency_ms"][p]
        out[f"{p}_ms"] = float(saved)
        out[f"{p}_fraction"] = fraction(saved, before["latency_ms"][p])
    for key in ("throughput_per_s", "capacity_per_s"):
        if before.get(key) is None or after.get(key) is None:
            out[key] = out[key.replace("per_s", "fraction")] = None
            continue
        more = after[key] - before[key]
        out[key] = float(more)
        out[key.replace("per_s", "fraction")] = fraction(more, before[key])
    out["fallback_rate"] = float(before["fallback_rate"] - after["fallback_rate"])
    out["padding_fraction"] = float(before["padding_fraction"] - after["padding_fraction"])
    return out
