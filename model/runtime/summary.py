"""One call for `workbench run`: simulate, then the run's summary (a typed `RunSummary`).

`triage.runs` adds "packet" and "candidate"; everything else of the contract is here
(milliseconds, statistics after the warm-up). `RunSummary.to_json()` round-trips through
`json.dumps` as is, and the same inputs and seed give the same bytes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from model.runtime.bottleneck import classify
from model.runtime.inputs import RuntimeConfig
from model.runtime.simulate import RuntimeResult, SharedInputs, first_measured, simulate
from model.runtime.stats import (
    SCALARS,
    fallback_cost,
    headline,
    measured_latency_ms,
    measured_wait_ms,
)
from model.runtime.tail import (
    CONCURRENT_MAX_REQUESTS,
    PendingCounterfactuals,
    active_drivers,
    compositions,
    counterfactual_attribution,
    counterfactual_pool,
    finish_counterfactuals,
    possible_drivers,
    start_counterfactuals,
    start_reruns,
)
from model.runtime.workload import generate_requests
from model.service import ServiceTable


@dataclass(frozen=True)
class Percentiles:
    """Mean and percentiles of one measured quantity, ms (linear interpolation; `max` only for
    the latency)."""

    mean: float
    p50: float
    p95: float
    p99: float
    max: float | None = None

    def to_json(self) -> dict[str, float]:
        """The contract's object: mean, p50, p95, p99 (then max), in that order."""
        out = {"mean": self.mean, "p50": self.p50, "p95": self.p95, "p99": self.p99}
        if self.max is not None:
            out["max"] = self.max
        return out


@dataclass(frozen=True)
class SlaVerdict:
    """Whether each SLA target holds (None where the packet sets none)."""

    p95_ok: bool | None
    p99_ok: bool | None
    throughput_ok: bool | None


@dataclass(frozen=True)
class RunSummary:
    """A run's summary: the `workbench run --json` contract as a typed object.

    Attributes (times in ms, statistics over the measured requests after the warm-up):
        seed, requests, measured_requests: the run's seed, requests drawn and measured.
        latency_ms, queue_wait_ms, service_ms: finish - arrival, start - arrival, finish - start.
        throughput_per_s: completions per second over the measurement window.
        core_utilization: busy fraction of each core; fairness_jain: Jain's index of it.
        fallback_rate: share of requests whose batch ran the generic path.
        launches_per_request, hbm_peak_demand_ratio, hbm_oversubscribed_fraction: None when
            service is a pinned distribution.
        sla: the verdicts.
        fallback_cost_ms, tail_attribution_ms, classification: nested contract objects
            (model.runtime.stats.fallback_cost, model.runtime.tail, model.runtime.bottleneck).
        packet, candidate: set by the layer that knows the packet (triage.runs); they lead
            the JSON when set.
    """

    seed: int
    requests: int
    measured_requests: int
    latency_ms: Percentiles
    queue_wait_ms: Percentiles
    service_ms: Percentiles
    throughput_per_s: float
    core_utilization: tuple[float, ...]
    fairness_jain: float
    fallback_rate: float
    launches_per_request: float | None
    hbm_peak_demand_ratio: float | None
    hbm_oversubscribed_fraction: float | None
    sla: SlaVerdict
    fallback_cost_ms: dict
    tail_attribution_ms: dict
    classification: dict
    packet: str | None = None
    candidate: str | None = None

    def to_json(self) -> dict:
        """The JSON contract (key order included): what `workbench run --json` prints."""
        head = {} if self.packet is None else {"packet": self.packet, "candidate": self.candidate}
        return {
            **head,
            "seed": self.seed,
            "requests": self.requests,
            "measured_requests": self.measured_requests,
            "latency_ms": self.latency_ms.to_json(),
            "queue_wait_ms": self.queue_wait_ms.to_json(),
            "service_ms": self.service_ms.to_json(),
            "throughput_per_s": self.throughput_per_s,
            "core_utilization": list(self.core_utilization),
            "fairness_jain": self.fairness_jain,
            "fallback_rate": self.fallback_rate,
            "launches_per_request": self.launches_per_request,
            "hbm_peak_demand_ratio": self.hbm_peak_demand_ratio,
            "hbm_oversubscribed_fraction": self.hbm_oversubscribed_fraction,
            "sla": dataclasses.asdict(self.sla),
            "fallback_cost_ms": self.fallback_cost_ms,
            "tail_attribution_ms": self.tail_attribution_ms,
            "classification": self.classification,
        }


@dataclass(frozen=True)
class RunReport:
    """A run's typed summary and the full result behind it; `summary` is its JSON contract."""

    run: RunSummary
    result: RuntimeResult

    @cached_property
    def summary(self) -> dict:
        """The JSON contract as a dict (built once; readers must not change it)."""
        return self.run.to_json()


def summarize(
    result: RuntimeResult,
    table: ServiceTable | None = None,
    *,
    all_compiled_table: ServiceTable | None = None,
    command: str = "",
) -> RunSummary:
    """The summary of a finished run (re-simulates the counterfactuals for attribution).

    `command` is the exact command that reproduces the run; it goes into the classification.
    """
    if len(result.stream.arrival_ms) <= CONCURRENT_MAX_REQUESTS:
        with counterfactual_pool(len(result.stream.arrival_ms)) as pool:
            # The re-runs first: they overlap the statistics below (the kernels release the
            # GIL), which share one gather of the measured latencies.
            pending = start_counterfactuals(result, table, all_compiled_table, pool)
            return _summarize_beside(result, pending, table, all_compiled_table, command)
    head = headline(result)  # peak memory: each statistic gathers and drops its own arrays,
    p99_tail, p95_tail, mean = compositions(result, (0.01, 0.05))  # then one re-run at a time
    counterfactual = counterfactual_attribution(result, table, all_compiled_table)
    fallback = fallback_cost(result)
    return _assemble(result, head, (p99_tail, p95_tail, mean), fallback, counterfactual, command)


def _summarize_beside(
    result: RuntimeResult,
    pending: PendingCounterfactuals,
    table: ServiceTable | None,
    all_compiled_table: ServiceTable | None,
    command: str,
) -> RunSummary:
    """The summary of a finished run whose re-runs are in flight (`pending`, over its active
    drivers or a superset of them): its own statistics first, then the re-runs left."""
    latency, waits = measured_latency_ms(result), measured_wait_ms(result)
    head = headline(result, latency_ms=latency, wait_ms=waits[0])
    groups = compositions(result, (0.01, 0.05), latency_ms=latency, waits_ms=waits)
    del latency, waits
    fallback = fallback_cost(result)  # before the wait: the pool may still be busy
    base_tail = (head["latency_ms"]["p95"], head["latency_ms"]["p99"])  # one pass
    counterfactual = finish_counterfactuals(
        pending, base_tail, pinned=result.pinned, all_compiled_table=all_compiled_table,
        drivers=active_drivers(result, table),
    )  # fmt: skip
    return _assemble(result, head, groups, fallback, counterfactual, command)


def _assemble(result, head, groups, fallback, counterfactual, command) -> RunSummary:
    """The RunSummary of a run's headline, tail groups, fallback cost and counterfactuals."""
    p99_tail, p95_tail, mean = groups
    classification = classify(
        p99_tail,
        p95_tail,
        mean,
        counterfactual,
        command,
        utilization_mean=float(np.mean(head["core_utilization"])),
    )
    return RunSummary(
        **{k: head[k] for k in SCALARS},
        latency_ms=Percentiles(**head["latency_ms"]),
        queue_wait_ms=Percentiles(**head["queue_wait_ms"]),
        service_ms=Percentiles(**head["service_ms"]),
        core_utilization=tuple(head["core_utilization"]),
        sla=SlaVerdict(**head["sla"]),
        fallback_cost_ms=fallback,
        tail_attribution_ms={
            "slowest_1pct": p99_tail,
            "slowest_5pct": p95_tail,
            "all_measured": mean,
            "counterfactual": counterfactual,
        },
        classification=classification,
    )


def run_summary(
    config: RuntimeConfig,
    table: ServiceTable | None = None,
    *,
    all_compiled_table: ServiceTable | None = None,
    command: str = "",
) -> RunReport:
    """Simulate `config` and summarise it: what `workbench run PACKET --json` prints.

    Args:
        config: the run (apply --seed / --requests with dataclasses.replace first).
        table: the compile-plan model's service table (service.source: model).
        all_compiled_table: the same plan with every shape compiled (optional; makes the
            generic path's extra cost and the no-fallback counterfactual exact).
        command: the command line that reproduces the run.
    """
    stream = generate_requests(config.workload, config.service, config.seed)
    if len(stream.arrival_ms) > CONCURRENT_MAX_REQUESTS:  # memory: the run, then its re-runs
        result = simulate(config, table, all_compiled_table=all_compiled_table, stream=stream)
        run = summarize(result, table, all_compiled_table=all_compiled_table, command=command)
        return RunReport(run=run, result=result)
    # The re-runs need only the request stream: they start before the run itself, on the
    # pool's thread, while this one simulates (the kernels release the GIL), over the drivers
    # that can turn out active; the summary is the same bits as `summarize` after `simulate`.
    first = first_measured(config, stream)
    with counterfactual_pool(len(stream.arrival_ms)) as pool:
        shared = SharedInputs()  # the requests' shape columns, found once for all runs
        drivers = possible_drivers(config, table, stream, shared=shared)
        pending = start_reruns(
            config, stream, first, table, all_compiled_table, pool, drivers, shared
        )
        try:
            result = simulate(config, table, all_compiled_table=all_compiled_table, stream=stream)
        except BaseException:
            for future in pending.futures:
                future.cancel()
            raise
        run = _summarize_beside(result, pending, table, all_compiled_table, command)
    return RunReport(run=run, result=result)
