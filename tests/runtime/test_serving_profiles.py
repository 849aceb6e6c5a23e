"""The serving run's chart series agree with its summary and with a brute-force reading of
its traces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.runtime.serving import ContinuousPolicy, simulate_serving
from model.runtime.serving_profiles import binned_peaks, serving_profiles
from model.runtime.serving_summary import serving_summary

from .test_serving import config, h100_table  # noqa: F401 - the module's table fixture

PERCENTILES = np.array([50.0, 95.0, 99.0])


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.floats(0, 100, allow_nan=False), st.integers(-5, 5)), min_size=1, max_size=40
    ),
    bins=st.integers(1, 12),
)
def test_binned_peaks_are_each_bins_highest_level(steps, bins: int) -> None:  # type: ignore[no-untyped-def]
    times = np.sort(np.array([t for t, _ in steps]))
    levels = np.array([v for _, v in steps], dtype=np.float64)
    edges = np.linspace(0.0, 100.0, bins + 1)
    got = binned_peaks(times, levels, edges)
    for b in range(bins):
        lo, hi = edges[b], edges[b + 1]
        last = b == bins - 1
        inside = levels[(times >= lo) & ((times <= hi) if last else (times < hi))]
        before = levels[times < lo]
        carried = before[-1] if len(before) else 0.0
        assert got[b] == max([carried, *inside.tolist()])


@pytest.mark.parametrize("cores", [1, 3])
def test_profiles_agree_with_the_summary(h100_table, cores: int) -> None:  # noqa: F811
    cfg = config(
        rate=3.0 * cores,
        prompt=((200, 900), (0.5, 0.5)),
        output=((1, 40, 200), (0.1, 0.5, 0.4)),
        policy=ContinuousPolicy(16, 2048, True, 6000),
        cores=cores,
        placement="least-loaded",
        requests=3000,
    )
    result = simulate_serving(cfg, h100_table)
    summary = serving_summary(result, h100_table)
    p = serving_profiles(result, PERCENTILES, bins=50)
    for field in ("ttft_ms", "tpot_ms", "latency_ms"):
        assert getattr(p, field).tolist() == [summary[field][k] for k in ("p50", "p95", "p99")]
    assert p.engine_tokens_per_s.sum() == pytest.approx(summary["tokens_per_s"], rel=1e-12)
    assert p.kv_peak_tokens.max() == summary["kv_cache"]["peak_tokens"] <= 6000
    assert len(p.engine_busy) == cores and np.all((p.engine_busy > 0) & (p.engine_busy <= 1))
    # The queue's peak is the most requests ever arrived and not yet scheduled.
    r = result.requests
    at = np.sort(np.concatenate([r.arrival_ms, r.scheduled_ms]))
    waiting = np.searchsorted(np.sort(r.arrival_ms), at, side="right") - np.searchsorted(
        np.sort(r.scheduled_ms), at, side="right"
    )
    assert p.queue_peak.max() == waiting.max()
    assert len(p.time_s) == 50 and p.time_s[0] == 0.0
