"""Statistics of one run: latency percentiles, utilization, fairness, HBM demand and profiles.

Statistics skip the warm-up (the first `warmup_fraction` of requests by arrival). The
measurement window runs from the first measured arrival to the last measured completion.
Times in ms. Per-request figures are gathered from the batches for the measured requests and
dropped after use (`measured_latency_ms` and friends), never kept on the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.runtime.simulate import HbmTimeline, RuntimeResult

PERCENTILES = {"p50": 50.0, "p95": 95.0, "p99": 99.0}


def describe_ms(values: np.ndarray, *, with_max: bool = False) -> dict[str, float]:
    """Mean, p50, p95, p99 (and max) of `values` (ms) as plain floats (linear interpolation):
    np.percentile's values to the last bit, from one partition at the ranks it reads
    (`percentile_ranks`; without np.percentile's own set-up, a third of its time on 16,000
    values). NaN (or inf - inf) in the values: np.percentile itself."""
    n = len(values)
    if n == 0:
        raise ValueError("no measured requests: lower inputs.workload.warmup_fraction")
    out = {"mean": float(np.mean(values))}
    q = list(PERCENTILES.values())
    if np.isnan(out["mean"]):
        qs = np.percentile(values, q)
    else:
        below, above, gamma = percentile_ranks(n, q)
        ranks = np.unique(np.concatenate([below, above]))
        ordered = np.partition(values, ranks)
        qs = interpolate_percentiles(ordered[below], ordered[above], gamma)
    out.update({k: float(v) for k, v in zip(PERCENTILES, qs, strict=True)})
    if with_max:
        out["max"] = float(np.max(values))
    return out


def percentile_ranks(n: int, q) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What np.percentile(values, q) (linear method) reads of n values: (below, above, gamma),
    per percentile in q the 0-based ranks in the ascending order of the values it interpolates
    between (int64) and the weight of the upper one (float64).

    numpy's own arithmetic, step by step (numpy/lib/_function_base_impl.py: `percentile`,
    `_quantile`, `_get_indexes`, `_get_gamma`; numpy 2.x): virtual index (n - 1) * (q / 100),
    its floor and the next rank; at or past the last value both ranks are the last (numpy's
    index -1, which its gamma subtracts as -1). tests/runtime/test_fast_tail.py checks the
    result against np.percentile bit for bit.
    """
    virtual = (n - 1) * np.true_divide(np.asarray(q, np.float64), 100)
    below = np.floor(virtual)
    above = below + 1
    past = virtual >= n - 1
    below[past] = -1
    above[past] = -1
    gamma = virtual - below.astype(np.intp)
    last = np.int64(n - 1)
    return (
        np.where(past, last, below).astype(np.int64),
        np.where(past, last, above).astype(np.int64),
        gamma,
    )


def interpolate_percentiles(
    at_below: np.ndarray, at_above: np.ndarray, gamma: np.ndarray
) -> np.ndarray:
    """np.percentile's linear interpolation between the values at the ranks `percentile_ranks`
    gives (numpy's `_lerp`: from below for gamma < 0.5, from above otherwise), ms in, ms out."""
    diff = at_above - at_below
    out = at_below + diff * gamma
    np.subtract(at_above, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


def measured(result: RuntimeResult) -> slice:
    """Slice of the measured requests (after warm-up) in the per-request arrays."""
    return slice(result.first_measured, None)


def measured_latency_ms(result: RuntimeResult) -> np.ndarray:
    """(M,) finish - arrival of the measured requests, ms (a fresh array)."""
    req, m = result.requests, measured(result)
    return req.of_batch(result.batches.finish_ms, m) - req.arrival_ms[m]


def measured_wait_ms(result: RuntimeResult) -> tuple[np.ndarray, np.ndarray]:
    """(queue wait, batching wait) of the measured requests, ms (fresh arrays): start -
    arrival, and its part until the batch was ready (or service start if sooner)."""
    req, m = result.requests, measured(result)
    arrival = req.arrival_ms[m]
    wait = req.of_batch(result.batches.start_ms, m) - arrival
    ready = req.of_batch(result.batches.ready_ms, m)
    return wait, np.minimum(np.maximum(ready - arrival, 0.0), wait)


def window_ms(result: RuntimeResult) -> tuple[float, float]:
    """(start, end) of the measurement window, ms."""
    req = result.requests
    m = measured(result)
    return float(req.arrival_ms[m][0]), float(np.max(req.of_batch(result.batches.finish_ms, m)))


def throughput_per_s(result: RuntimeResult, window: tuple[float, float] | None = None) -> float:
    """Measured completions per second over the measurement window (`window`: its
    `window_ms` when the caller has it; likewise below)."""
    t0, t1 = window_ms(result) if window is None else window
    n = len(result.requests.arrival_ms) - result.first_measured
    return float(n / (t1 - t0) * 1000.0) if t1 > t0 else 0.0


def core_busy_ms(result: RuntimeResult, t0: float, t1: float) -> np.ndarray:
    """(cores,) time each core spent serving batches inside [t0, t1], ms."""
    b = result.batches
    overlap = np.clip(np.minimum(b.finish_ms, t1) - np.maximum(b.start_ms, t0), 0.0, None)
    return np.bincount(b.core, weights=overlap, minlength=int(result.config.hardware.cores))


def core_utilization(
    result: RuntimeResult, window: tuple[float, float] | None = None
) -> np.ndarray:
    """(cores,) busy fraction of each core over the measurement window, in [0, 1]."""
    t0, t1 = window_ms(result) if window is None else window
    busy = core_busy_ms(result, t0, t1)
    return busy / (t1 - t0) if t1 > t0 else np.zeros_like(busy)


def jain_index(x: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one takes all."""
    x = np.asarray(x, dtype=np.float64)
    denom = len(x) * float(np.sum(x * x))
    return float(np.sum(x) ** 2 / denom) if denom > 0 else 1.0


def hbm_peak_demand_ratio(
    result: RuntimeResult, window: tuple[float, float] | None = None
) -> float | None:
    """Highest requested HBM demand / device bandwidth inside the window (None when pinned:
    a pinned distribution has no traffic). Above 1 means memory phases were stretched."""
    if result.pinned:
        return None
    t0, t1 = window_ms(result) if window is None else window
    h = result.hbm
    first = max(int(np.searchsorted(h.time_ms, t0, side="right")) - 1, 0)
    last = int(np.searchsorted(h.time_ms, t1, side="left"))
    return float(np.max(h.demand_gbs[first : max(last, first + 1)]) / h.capacity_gbs)


def hbm_oversubscribed_fraction(
    result: RuntimeResult, window: tuple[float, float] | None = None
) -> float | None:
    """Share of the measurement window during which the memory phases in flight requested more
    than the device's HBM bandwidth: the time bursts collide and every one of them stretches
    (0..1; None when pinned: no traffic)."""
    if result.pinned:
        return None
    t0, t1 = window_ms(result) if window is None else window
    if t1 <= t0:
        return 0.0
    h, t = result.hbm, result.hbm.time_ms
    # Interval i runs from t[i] to t[i + 1] (the last to the window's end or its own start);
    # only the oversubscribed ones are measured (their values, summed in their order).
    over = np.flatnonzero(h.demand_gbs > h.capacity_gbs)
    ends = t[np.minimum(over + 1, len(t) - 1)]
    ends[over + 1 == len(t)] = max(t1, float(t[-1]))
    inside = np.clip(np.minimum(ends, t1) - np.maximum(t[over], t0), 0.0, None)
    return float(np.sum(inside) / (t1 - t0))


def fallback_cost(result: RuntimeResult) -> dict[str, float | int | bool]:
    """Fallback rate and cost: stall and generic-path extra time per measured request, ms."""
    req, b = result.requests, result.batches
    m = measured(result)
    cost = req.of_batch(b.stall_ms + b.fallback_extra_ms, m)
    fb = req.of_batch(b.fallback, m)
    started = b.stall_ms > 0
    return {
        "rate": float(np.mean(fb)),
        "mean_per_request_ms": float(np.mean(cost)),
        "mean_per_fallback_request_ms": float(np.mean(cost[fb])) if np.any(fb) else 0.0,
        "stalled_batches": int(np.count_nonzero(started)),
        "stall_total_ms": float(np.sum(b.stall_ms)),
        "generic_path_cost_known": bool(result.fallback_cost_known),
    }


def launches_per_request(result: RuntimeResult) -> float | None:
    """Kernels launched per measured request (a batch's launches shared by its requests);
    None when the service is a pinned distribution (no kernels modelled)."""
    if result.pinned:
        return None
    req, b = result.requests, result.batches
    m = measured(result)
    return float(np.mean(req.of_batch(b.launches / b.size, m)))


SCALARS = (
    "seed",
    "requests",
    "measured_requests",
    "throughput_per_s",
    "fairness_jain",
    "fallback_rate",
    "launches_per_request",
    "hbm_peak_demand_ratio",
    "hbm_oversubscribed_fraction",
)
"""The headline's plain-number fields, copied as they are into run summaries and sweep rows."""


def headline(
    result: RuntimeResult,
    *,
    latency_ms: np.ndarray | None = None,
    wait_ms: np.ndarray | None = None,
) -> dict:
    """The run's headline figures (the JSON contract minus attribution and classification).
    `latency_ms`, `wait_ms`: the measured latencies and queue waits when the caller has them
    already (`measured_latency_ms`, `measured_wait_ms`); gathered here and dropped once
    described otherwise."""
    req = result.requests
    m = measured(result)
    window = window_ms(result)
    util = core_utilization(result, window)
    sla = result.config.sla
    thr = throughput_per_s(result, window)
    latency = describe_ms(
        measured_latency_ms(result) if latency_ms is None else latency_ms, with_max=True
    )
    if wait_ms is None:
        wait_ms = req.of_batch(result.batches.start_ms, m) - req.arrival_ms[m]
    queue_wait = describe_ms(wait_ms)
    b = result.batches
    service = describe_ms(req.of_batch(b.finish_ms - b.start_ms, m))

    def ok(value: float, target: float | None, below: bool) -> bool | None:
        if target is None:
            return None
        return bool(value <= target) if below else bool(value >= target)

    return {
        "seed": int(result.config.seed),
        "requests": len(req.arrival_ms),
        "measured_requests": len(req.arrival_ms) - result.first_measured,
        "latency_ms": latency,
        "queue_wait_ms": queue_wait,
        "service_ms": service,
        "throughput_per_s": thr,
        "core_utilization": [float(u) for u in util],
        "fairness_jain": jain_index(util),
        "fallback_rate": float(np.mean(req.of_batch(result.batches.fallback, m))),
        "launches_per_request": launches_per_request(result),
        "hbm_peak_demand_ratio": hbm_peak_demand_ratio(result, window),
        "hbm_oversubscribed_fraction": hbm_oversubscribed_fraction(result, window),
        "sla": {
            "p95_ok": ok(latency["p95"], sla.p95_ms, True),
            "p99_ok": ok(latency["p99"], sla.p99_ms, True),
            "throughput_ok": ok(thr, sla.min_throughput_per_s, False),
        },
    }


@dataclass(frozen=True)
class RuntimeProfiles:
    """Compact arrays for the app's live charts (it downsamples further).

    Attributes:
        wait_edges_ms: (bins + 1,) queue-wait histogram edges, ms.
        wait_counts: (bins,) measured requests per bin.
        wait_cdf_ms: (points,) queue wait at each probability in wait_cdf_p, ms.
        wait_cdf_p: (points,) probabilities 0..1.
        batch_sizes: (max_batch,) sizes 1..max_batch.
        batch_counts: (max_batch,) batches of each size dispatched in the window.
        core_utilization: (cores,) busy fraction per core.
        fairness_jain: Jain's index of core_utilization.
        hbm_time_ms: (<= points,) times of the HBM demand series, ms.
        hbm_demand_ratio: requested demand / bandwidth, the maximum over each interval
            (peaks survive downsampling).
    """

    wait_edges_ms: np.ndarray
    wait_counts: np.ndarray
    wait_cdf_ms: np.ndarray
    wait_cdf_p: np.ndarray
    batch_sizes: np.ndarray
    batch_counts: np.ndarray
    core_utilization: np.ndarray
    fairness_jain: float
    hbm_time_ms: np.ndarray
    hbm_demand_ratio: np.ndarray


def downsample_peaks(h: HbmTimeline, points: int) -> tuple[np.ndarray, np.ndarray]:
    """At most `points` (time, demand/bandwidth) pairs; each the maximum over its interval."""
    ratio = h.demand_gbs / h.capacity_gbs
    if len(h.time_ms) <= points:
        return h.time_ms.copy(), ratio
    edges = np.linspace(h.time_ms[0], h.time_ms[-1], points + 1)
    first = np.maximum(np.searchsorted(h.time_ms, edges[:-1], side="right") - 1, 0)
    peaks = np.maximum.reduceat(ratio, first)  # segments starting inside each interval ...
    return edges[:-1], np.maximum(peaks, ratio[first])  # ... and the one running into it


def runtime_profiles(
    result: RuntimeResult, *, bins: int = 40, cdf_points: int = 101, hbm_points: int = 400
) -> RuntimeProfiles:
    """Queue-wait histogram and CDF, batch-size counts, core utilization, HBM demand series."""
    b = result.batches
    wait, _ = measured_wait_ms(result)
    counts, edges = np.histogram(wait, bins=bins)
    p = np.linspace(0.0, 1.0, cdf_points)
    t0, _ = window_ms(result)
    big_b = int(result.config.batch_policy.max_batch)
    in_window = b.start_ms >= t0
    util = core_utilization(result)
    hbm_t, hbm_r = downsample_peaks(result.hbm, hbm_points)
    return RuntimeProfiles(
        wait_edges_ms=edges,
        wait_counts=counts,
        wait_cdf_ms=np.quantile(wait, p),
        wait_cdf_p=p,
        batch_sizes=np.arange(1, big_b + 1),
        batch_counts=np.bincount(b.size[in_window], minlength=big_b + 1)[1:],
        core_utilization=util,
        fairness_jain=jain_index(util),
        hbm_time_ms=hbm_t,
        hbm_demand_ratio=hbm_r,
    )
