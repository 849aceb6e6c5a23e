"""What `workbench run --json` prints for a serving (continuous-batching) run.

Tail first: every latency-like figure carries mean/p50/p95/p99/max over the measured requests
(the first `warmup_fraction` by arrival are left out). Times ms, rates per second.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from model.runtime.serving import IterationTable, ServingResult

KV_TIMELINE_POINTS = 200
"""Points of the KV-occupancy timeline in the summary (the chart's resolution)."""

COMPOSITION = (
    "queueing",
    "prefill",
    "decode",
    "prefill_interference",
    "preemption",
)
"""Additive parts of a request's latency (model/runtime/README.md "Serving tail")."""


def _stats(values: np.ndarray) -> dict[str, float | None]:
    v = values[np.isfinite(values)]
    if len(v) == 0:
        return {k: None for k in ("mean", "p50", "p95", "p99", "max")}
    p50, p95, p99, top = np.percentile(v, [50, 95, 99, 100])  # one partition; p100 is the max
    return {
        "mean": float(np.mean(v)),
        "p50": float(p50),
        "p95": float(p95),
        "p99": float(p99),
        "max": float(top),
    }


def latency_parts(result: ServingResult) -> dict[str, np.ndarray]:
    """(N,) per-request parts that sum to the latency (to rounding), ms.

    queueing: arrival to the first iteration that scheduled it; prefill: from there to the
    first token, less preemption before it; prefill_interference: decode iterations' time
    spent on other requests' prefill tokens; preemption: eviction to recomputed; decode: the
    rest (its own decode steps at the batch's pure-decode speed).
    """
    r = result.requests
    queueing = r.scheduled_ms - r.arrival_ms
    prefill = r.first_token_ms - r.scheduled_ms - r.preempted_before_first_ms
    decode = r.latency_ms - queueing - prefill - r.interference_ms - r.preempted_ms
    return {
        "queueing": queueing,
        "prefill": prefill,
        "decode": decode,
        "prefill_interference": r.interference_ms,
        "preemption": r.preempted_ms,
    }


def _composition(result: ServingResult) -> dict[str, Any]:
    parts = latency_parts(result)
    m = result.measured
    latency = result.requests.latency_ms[m]
    order = np.argsort(latency, kind="stable")
    groups = {}
    for name, share in (("slowest_1pct", 0.01), ("slowest_5pct", 0.05), ("all_measured", 1.0)):
        count = max(1, round(share * len(order)))
        pick = order[len(order) - count :]
        groups[name] = {
            "requests": int(count),
            "latency_ms": float(np.mean(latency[pick])),
            **{p: float(np.mean(parts[p][m][pick])) for p in COMPOSITION},
        }
    return groups


def kv_timeline(result: ServingResult, points: int = KV_TIMELINE_POINTS) -> dict[str, list]:
    """KV-cache occupancy (fraction of all engines' capacity) at `points` even times from the
    first to the last iteration end: each engine's tokens held after its latest iteration."""
    it = result.iterations
    capacity = result.config.policy.kv_cache_tokens
    engines = int(result.config.hardware.cores)
    if len(it.end_ms) == 0:
        return {"t_ms": [], "occupancy": []}
    times = np.linspace(it.end_ms.min(), it.end_ms.max(), points)
    held = np.zeros(points)
    for e in range(engines):
        ends, kv = it.end_ms, it.kv_tokens
        if engines > 1:
            mine = it.engine == e
            ends, kv = ends[mine], kv[mine]
        if np.any(ends[1:] < ends[:-1]):  # an engine's iterations are in time order already
            order = np.argsort(ends, kind="stable")
            ends, kv = ends[order], kv[order]
        index = np.searchsorted(ends, times, side="right") - 1
        held += np.where(index >= 0, kv[np.maximum(index, 0)], 0)
    denominator = float(capacity * engines) if capacity else float(max(held.max(), 1.0))
    return {
        "t_ms": [round(float(t), 6) for t in times],
        "occupancy": [round(float(h) / denominator, 6) for h in held],
    }


def prefill_fallback_rate(result: ServingResult, table: IterationTable | None) -> float | None:
    """Share of iterations with prefill tokens whose chunk ran the generic path (None when
    pinned or no prefill)."""
    it = result.iterations
    has = it.prefill_tokens > 0
    if table is None or table.pre_fallback is None or not has.any():
        return None
    bucket = np.searchsorted(table.p_edges, it.prefill_tokens[has])
    return float(np.mean(table.pre_fallback[bucket]))


def serving_summary(
    result: ServingResult, table: IterationTable | None = None, *, command: str = ""
) -> dict[str, Any]:
    """The JSON contract of a serving run (the CLI adds `packet` and `candidate`)."""
    cfg = result.config
    r = result.requests
    m = result.measured
    window = float(np.max(r.finish_ms[m]) - np.min(r.arrival_ms[m])) if m.any() else 0.0
    tokens = int(r.output_len[m].sum())
    ttft, tpot, latency = _stats(r.ttft_ms[m]), _stats(r.tpot_ms[m]), _stats(r.latency_ms[m])
    sla = cfg.sla

    def ok(target: float | None, value: float | None) -> bool | None:
        return None if target is None or value is None else bool(value <= target)

    it = result.iterations
    capacity = cfg.policy.kv_cache_tokens
    return {
        "seed": int(cfg.seed),
        "requests": len(r.arrival_ms),
        "measured_requests": int(m.sum()),
        "scheduler": "continuous",
        "service_source": cfg.service.source,
        "ttft_ms": ttft,
        "tpot_ms": tpot,
        "latency_ms": latency,
        "throughput_per_s": (float(m.sum()) / window * 1000.0) if window > 0 else None,
        "tokens_per_s": (tokens / window * 1000.0) if window > 0 else None,
        "iterations": len(it.start_ms),
        "preemptions": int(r.preemptions[m].sum()),
        "preempted_requests": int((r.preemptions[m] > 0).sum()),
        "preemption_rate": float(r.preemptions[m].sum() / m.sum()) if m.any() else None,
        "prefill_fallback_rate": prefill_fallback_rate(result, table),
        "kv_cache": {
            "capacity_tokens_per_engine": int(capacity) if capacity else None,
            "peak_tokens": int(it.kv_tokens.max()) if len(it.kv_tokens) else 0,
            "timeline": kv_timeline(result),
        },
        "sla": {
            "p95_ok": ok(sla.p95_ms, latency["p95"]),
            "p99_ok": ok(sla.p99_ms, latency["p99"]),
            "ttft_p95_ok": ok(sla.ttft_p95_ms, ttft["p95"]),
            "tpot_p95_ok": ok(sla.tpot_p95_ms, tpot["p95"]),
        },
        "tail_attribution_ms": _composition(result),
        "command": command,
    }
