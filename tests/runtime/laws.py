"""Sample-path laws every simulated run must obey (checked on every run the tests make)."""

from __future__ import annotations

import numpy as np

from model.runtime.simulate import RuntimeResult


def _time_integral(up: np.ndarray, down: np.ndarray) -> float:
    """Integral over time of #(intervals [up, down) open), by an event sweep."""
    times = np.concatenate([up, down])
    step = np.concatenate([np.ones(len(up)), -np.ones(len(down))])
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(step[order])
    return float(np.sum(level[:-1] * np.diff(times)))


def check_laws(result: RuntimeResult) -> None:
    """Little's law (system and queue), the utilization law, and schedule sanity."""
    req, b = result.requests, result.batches
    cfg = result.config
    horizon = float(np.max(req.finish_ms))
    lam = len(req.arrival_ms) / horizon
    # Little: time-average number in system (event sweep) = lambda * mean time in system.
    in_system = _time_integral(req.arrival_ms, req.finish_ms) / horizon
    assert np.isclose(in_system, lam * np.mean(req.finish_ms - req.arrival_ms), rtol=1e-9)
    waiting = _time_integral(req.arrival_ms, req.start_ms) / horizon
    assert np.isclose(waiting, lam * np.mean(req.queue_wait_ms), rtol=1e-9, atol=1e-12)
    # Utilization law per core: busy fraction = throughput of batches x mean batch service.
    for k in range(cfg.hardware.cores):
        mine = b.core == k
        busy = _time_integral(b.start_ms[mine], b.finish_ms[mine]) / horizon
        x = np.count_nonzero(mine) / horizon
        s = float(np.mean(b.finish_ms[mine] - b.start_ms[mine])) if np.any(mine) else 0.0
        assert np.isclose(busy, x * s, rtol=1e-9, atol=1e-12)
        starts, finishes = b.start_ms[mine], b.finish_ms[mine]
        order = np.argsort(starts, kind="stable")
        assert np.all(starts[order][1:] >= finishes[order][:-1]), "a core ran two batches at once"
    # Schedule sanity: causality, batch sizes, every request served once.
    assert np.all(req.start_ms >= req.arrival_ms)
    assert np.all(req.finish_ms >= req.start_ms)
    assert np.all((b.size >= 1) & (b.size <= cfg.batch_policy.max_batch))
    assert np.array_equal(np.bincount(req.batch, minlength=len(b.size)), b.size)
    assert np.all(b.ready_ms <= b.start_ms), "a batch left before it was ready"
