"""Compact series of a serving run for the app's charts, from its per-request and per-iteration
arrays (a few KB, so a cache of runs never keeps the 20,000-request traces).

Latency-like series are read at given percentiles of the measured requests (the first
`warmup_fraction` by arrival left out, as the summary; linear interpolation, as the summary's
percentiles). Time series are binned over the run's span, from the first iteration's start to
the last one's end, and keep each bin's highest value, so bursts stay visible however few bins
a chart has. Times ms (or s where named), lengths tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.runtime.serving import ServingResult

PROFILE_BINS = 240
"""Time bins of the queue and KV-cache series (about twice a wide chart's columns)."""


@dataclass(frozen=True)
class ServingProfiles:
    """A serving run's chart series.

    Attributes:
        percentiles: (P,) the percentiles the distributions are read at.
        ttft_ms, tpot_ms, latency_ms: (P,) time to first token, time per output token after
            the first (requests with one output token have none) and end-to-end latency of
            the measured requests at those percentiles, ms.
        time_s: (B,) start of each time bin, s from the run's first iteration.
        queue_peak: (B,) most requests waiting for their first iteration (arrived, never
            scheduled) in each bin.
        kv_peak_tokens: (B,) most KV-cache tokens any one engine held in each bin.
        engine_busy: (E,) share of the run's span each engine spent in iterations, 0..1.
        engine_tokens_per_s: (E,) output tokens per second of the measured requests each
            engine finished, over the summary's measurement window (they sum to its
            tokens_per_s).
    """

    percentiles: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    latency_ms: np.ndarray
    time_s: np.ndarray
    queue_peak: np.ndarray
    kv_peak_tokens: np.ndarray
    engine_busy: np.ndarray
    engine_tokens_per_s: np.ndarray


def _at_percentiles(values: np.ndarray, percentiles: np.ndarray) -> np.ndarray:
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return np.full(len(percentiles), np.nan)
    return np.percentile(finite, percentiles)


def binned_peaks(times: np.ndarray, levels: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(B,) the highest value of a step function over each bin [edges[b], edges[b + 1]): it
    takes levels[i] from times[i] (ascending) on and is 0 before times[0]; the level carried
    into a bin counts as well as every step inside it."""
    before = np.searchsorted(times, edges[:-1], side="right") - 1
    peak = np.where(before >= 0, levels[np.maximum(before, 0)], 0).astype(np.float64)
    if len(times):  # the steps inside each bin: contiguous runs of the sorted times
        starts = np.searchsorted(times, edges[:-1], side="left")
        starts[0] = 0  # (nothing lies outside the edges; the last bin takes its end)
        filled = np.diff(np.append(starts, len(times))) > 0
        inside = np.maximum.reduceat(levels.astype(np.float64), starts[filled])
        peak[filled] = np.maximum(peak[filled], inside)
    return peak


def serving_profiles(
    result: ServingResult, percentiles: np.ndarray, bins: int = PROFILE_BINS
) -> ServingProfiles:
    """The chart series of a serving run (see `ServingProfiles`)."""
    r, it, m = result.requests, result.iterations, result.measured
    engines = int(result.config.hardware.cores)
    q = np.asarray(percentiles, dtype=np.float64)
    if len(it.start_ms):
        t0, t1 = float(it.start_ms.min()), float(it.end_ms.max())
    else:
        t0 = t1 = 0.0
    edges = np.linspace(t0, max(t1, t0 + 1e-9), bins + 1)
    # Queue: +1 at each arrival, -1 when first scheduled (at the same instant the -1 first,
    # so a request an idle engine takes at once never counts as waiting).
    times = np.concatenate([r.arrival_ms, r.scheduled_ms])
    steps = np.concatenate([np.ones(len(r.arrival_ms)), -np.ones(len(r.scheduled_ms))])
    order = np.lexsort((steps, times))
    queue = binned_peaks(times[order], np.cumsum(steps[order]), edges)
    kv = np.zeros(bins)
    for e in range(engines):
        mine = it.engine == e
        ends, held = it.end_ms[mine], it.kv_tokens[mine]
        if np.any(ends[1:] < ends[:-1]):  # an engine's iterations are in time order already
            order = np.argsort(ends, kind="stable")
            ends, held = ends[order], held[order]
        kv = np.maximum(kv, binned_peaks(ends, held, edges))
    span = t1 - t0
    busy = np.bincount(it.engine, weights=it.end_ms - it.start_ms, minlength=engines)
    window = float(np.max(r.finish_ms[m]) - np.min(r.arrival_ms[m])) if m.any() else 0.0
    tokens = np.bincount(r.engine[m], weights=r.output_len[m], minlength=engines)
    return ServingProfiles(
        percentiles=q,
        ttft_ms=_at_percentiles(r.ttft_ms[m], q),
        tpot_ms=_at_percentiles(r.tpot_ms[m], q),
        latency_ms=_at_percentiles(r.latency_ms[m], q),
        time_s=(edges[:-1] - t0) / 1e3,
        queue_peak=queue,
        kv_peak_tokens=kv,
        engine_busy=busy / span if span > 0 else np.zeros(engines),
        engine_tokens_per_s=tokens / window * 1e3 if window > 0 else np.zeros(engines),
    )
