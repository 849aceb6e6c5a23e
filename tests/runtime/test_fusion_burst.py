"""The known failure, by mechanism: aggressive fusion cuts launch overhead and wins at low
load, but its denser HBM bursts (plus spill traffic) collide across cores sharing HBM and p95
gets worse at high load.

Two hand-made plans of one decode-like block, batch size 1, 8 cores sharing 1,000 GB/s:
- unfused: 0.8 ms of launches, 0.1 ms compute, 2.0 ms memory-bound at 250 GB/s (500 MB);
- fused: 0.2 ms of launches, 0.1 ms compute, the same 500 MB plus 125 MB of SRAM spill moved
  at 400 GB/s (1.5625 ms).
Alone, fused is 1.04 ms faster. Under load, the device's bandwidth caps throughput at
1e9 B/ms / bytes per request: 2.0 req/ms unfused, 1.6 req/ms fused.
"""

from __future__ import annotations

import pytest

from model.runtime.summary import run_summary
from model.runtime.tables import service_table_from_arrays
from tests.runtime.helpers import table_config

MB = 1e6


def plan(launch_ms: float, burst_gbs: float, spill_mb: float):
    mem_bytes = 500 * MB + spill_mb * MB
    return service_table_from_arrays(
        [1],
        [512],
        [[launch_ms]],
        [[0.1]],
        [[mem_bytes / (burst_gbs * 1e6)]],
        [[mem_bytes]],
        spill_bytes=[[spill_mb * MB]],
        launches=[[352 if launch_ms > 0.5 else 96]],
    )


UNFUSED, FUSED = plan(0.8, 250.0, 0.0), plan(0.2, 400.0, 125.0)


def summary(table, rate_per_s: float) -> dict:
    cfg = table_config(
        table, cores=8, rate_per_s=rate_per_s, weights=(1.0,), requests=12_000, seed=11
    )
    return run_summary(cfg, table, command="test").summary


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return {
        f"{name}@{load}": summary(table, rate)
        for name, table in (("unfused", UNFUSED), ("fused", FUSED))
        for load, rate in (("low", 100.0), ("high", 1450.0))
    }


def test_fusion_cuts_launches_and_wins_at_low_load(runs) -> None:
    low_u, low_f = runs["unfused@low"], runs["fused@low"]
    assert low_f["launches_per_request"] < low_u["launches_per_request"]
    assert low_f["latency_ms"]["mean"] < low_u["latency_ms"]["mean"] - 0.5
    assert low_f["latency_ms"]["p95"] < low_u["latency_ms"]["p95"]


def test_fusion_raises_peak_demand_and_worsens_p95_at_high_load(runs) -> None:
    high_u, high_f = runs["unfused@high"], runs["fused@high"]
    assert high_f["hbm_peak_demand_ratio"] > high_u["hbm_peak_demand_ratio"] > 1.0
    assert high_f["latency_ms"]["p95"] > 1.5 * high_u["latency_ms"]["p95"]
    drops = high_f["tail_attribution_ms"]["counterfactual"]["p99_drop_if_off_ms"]
    assert drops["contention"] > 0.5 * high_f["latency_ms"]["p99"]


def test_classifier_blames_memory_not_launches_for_the_fused_tail(runs) -> None:
    cls = runs["fused@high"]["classification"]
    named = {cls["primary"]["class"]} | {s["class"] for s in cls["secondary"]}
    assert cls["primary"]["class"] in {"memory bandwidth", "SRAM spill"}
    assert "launch overhead" not in named
