"""Shared pieces of the outputs: input fingerprints, tail figures, workload slices."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from packets.schema import Packet, TailFigures, WorkloadSlice
from triage.runs import reproduce_command
from triage.scenario import Scenario

PRODUCTION = "production"


def inputs_sha256(packet: Packet) -> str:
    """Fingerprint of everything the outputs are computed from (not owners, not outputs)."""
    data = packet.model_dump(mode="json")
    basis = {k: data[k] for k in ("topic", "seed", "inputs", "baseline", "candidates")}
    for candidate in basis[
        "candidates"
    ]:  # absent provenance leaves older fingerprints as they were
        if candidate.get("provenance") is None:
            candidate.pop("provenance", None)
    text = json.dumps(basis, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sla_ok(sla: dict[str, Any]) -> bool:
    """All SLA targets met (a target that is not set counts as met)."""
    return all(v is not False for v in sla.values())


def tail_figures(summary: dict[str, Any]) -> TailFigures:
    """Tail-first figures of a run summary."""
    lat = summary["latency_ms"]
    return TailFigures(
        p99_ms=lat["p99"],
        p95_ms=lat["p95"],
        p50_ms=lat["p50"],
        mean_ms=lat["mean"],
        throughput_per_s=summary["throughput_per_s"],
        sla_ok=sla_ok(summary["sla"]),
    )


def workload_slice(scenario: Scenario, path: str, shape_mix: str = PRODUCTION) -> WorkloadSlice:
    """The reproducible slice a scenario's run is."""
    return WorkloadSlice(
        config=scenario.candidate,
        seed=scenario.runtime.seed,
        requests=scenario.runtime.workload.requests,
        rate_per_s=scenario.runtime.workload.arrivals.rate_per_s,
        shape_mix=shape_mix,
        command=reproduce_command(path, scenario),
    )


def metric_value(tail: TailFigures, metric: str) -> float:
    """A primary metric's value (all in ms except throughput_per_s)."""
    return float(getattr(tail, metric))


def lower_is_better(metric: str) -> bool:
    """Latencies improve downwards, throughput upwards."""
    return metric != "throughput_per_s"
