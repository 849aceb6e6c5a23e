"""The run summary is a typed object (model.runtime.summary.RunSummary); the JSON contract is
produced from it, keys in the contract's order (issue 12: typed results between layers)."""

from __future__ import annotations

import json

from model.runtime.summary import Percentiles, RunSummary
from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet
from triage.runs import run_packet

CONTRACT_KEYS = [
    "packet", "candidate", "seed", "requests", "measured_requests", "latency_ms",
    "queue_wait_ms", "service_ms", "throughput_per_s", "core_utilization", "fairness_jain",
    "fallback_rate", "launches_per_request", "hbm_peak_demand_ratio",
    "hbm_oversubscribed_fraction", "sla", "fallback_cost_ms", "tail_attribution_ms",
    "classification",
]  # fmt: skip


def test_json_is_built_from_the_typed_summary() -> None:
    report = run_packet(load_packet(example_path(DEFAULT_EXAMPLE)), requests=4000)
    run = report.run
    assert isinstance(run, RunSummary) and isinstance(run.latency_ms, Percentiles)
    out = json.loads(json.dumps(report.summary, allow_nan=False))
    assert list(out) == CONTRACT_KEYS
    assert out["packet"] == run.packet and out["candidate"] == run.candidate == "baseline"
    assert list(out["latency_ms"]) == ["mean", "p50", "p95", "p99", "max"]
    assert list(out["queue_wait_ms"]) == ["mean", "p50", "p95", "p99"]  # no max there
    assert out["latency_ms"]["p99"] == run.latency_ms.p99 >= run.latency_ms.p95
    assert out["sla"] == {
        "p95_ok": run.sla.p95_ok,
        "p99_ok": run.sla.p99_ok,
        "throughput_ok": run.sla.throughput_ok,
    }
    assert out["core_utilization"] == list(run.core_utilization)
    assert report.summary is report.summary  # built once
