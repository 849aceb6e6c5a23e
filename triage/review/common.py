"""Shared pieces of the outputs: tail figures and workload slices."""

from __future__ import annotations

from typing import Any

from packets.schema import Packet, TailFigures, WorkloadSlice
from triage.runs import reproduce_command
from triage.scenario import Scenario

PRODUCTION = "production"


def sla_ok(sla: dict[str, Any]) -> bool:
    """All SLA targets met (a target that is not set counts as met)."""
    return all(v is not False for v in sla.values())


def tail_figures(summary: dict[str, Any]) -> TailFigures:
    """Tail-first figures of a run summary (a serving run's add TTFT and TPOT p95 and
    tokens/s; its p99..mean are end-to-end latency)."""
    lat = summary["latency_ms"]
    serving = {}
    if summary.get("scheduler") == "continuous":
        serving = {
            "ttft_p95_ms": summary["ttft_ms"]["p95"],
            "tpot_p95_ms": summary["tpot_ms"]["p95"],
            "tokens_per_s": summary["tokens_per_s"],
        }
    return TailFigures(
        p99_ms=lat["p99"],
        p95_ms=lat["p95"],
        p50_ms=lat["p50"],
        mean_ms=lat["mean"],
        throughput_per_s=summary["throughput_per_s"],
        sla_ok=sla_ok(summary["sla"]),
        **serving,
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
    """A primary metric's value (ms, except throughput_per_s and tokens_per_s: per second).
    ValueError when the figures lack it (a serving metric of a dynamic-batcher run)."""
    value = getattr(tail, metric)
    if value is None:
        raise ValueError(f"primary metric {metric} needs a serving packet (continuous batching)")
    return float(value)


def lower_is_better(metric: str) -> bool:
    """Latencies improve downwards, throughput and tokens/s upwards."""
    return metric not in ("throughput_per_s", "tokens_per_s")


def default_metric(packet: Packet) -> str:
    """The primary metric when none is named: TPOT p95 for a serving packet with a TPOT target
    (decode-step smoothness, what chunked prefill buys), TTFT p95 when only that is targeted,
    else the latency p99."""
    sla = packet.inputs.sla
    if packet.inputs.workload.block.phase == "serving":
        if sla.tpot_p95_ms is not None:
            return "tpot_p95_ms"
        if sla.ttft_p95_ms is not None:
            return "ttft_p95_ms"
    return "p99_ms"


def is_serving_packet(packet: Packet) -> bool:
    """True when the packet's runs use the continuous scheduler (block phase serving)."""
    return packet.inputs.workload.block.phase == "serving"
