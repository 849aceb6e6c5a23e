"""Tail attribution and bottleneck class of a serving (continuous-batching) run.

The composition in `serving_summary` says where the slowest requests' time went; this module
says what would change it. Each driver of the serving tail has a counterfactual that switches
it off, a re-run of the serving kernel on the same request stream (arrivals, lengths, routes
and pinned draws: common random numbers):

- prefill_interference: every iteration with decode steps is priced without its prefill tokens
  (as if a separate prefill pool ran them: disaggregated prefill, at no cost to the decodes);
- preemption: an unbounded KV cache (no preemption, no admission waits for KV memory);
- fallback: every prefill chunk on a compiled bucket (the generic path's chunks compiled at
  their own length; the other chunks keep their bucket);
- imbalance: one shared queue every engine admits from (central-queue: no engine idles while
  another has a queue).

Queueing is the remainder: the tail with every driver off is what the load alone costs on this
plan. p95 and p99 of end-to-end latency, TTFT and TPOT of every subset of the active drivers
give exact Shapley splits of (percentile - percentile with all off). Semantics and the rules:
model/runtime/README.md "Continuous batching", "Serving tail attribution". Times in ms.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from model.runtime.bottleneck import ranked_classification
from model.runtime.serving import IterationTable, ServingResult, simulate_serving
from model.runtime.serving_table import bucket_edges
from model.runtime.tail import COUNTERFACTUAL_WORKERS, shapley_values

DRIVERS = ("prefill_interference", "preemption", "fallback", "imbalance")
"""Drivers of the serving tail that a counterfactual can switch off (queueing: the rest)."""
METRICS = ("latency", "ttft", "tpot")
"""Per-request quantities whose p95 and p99 are attributed."""
OFF_MEANS = {
    "prefill_interference": "iterations with decode steps priced without their prefill tokens",
    "preemption": "an unbounded KV cache (no preemption, no admission waiting for KV memory)",
    "fallback": "every prefill chunk on a compiled bucket (generic-path chunks compiled)",
    "imbalance": "one shared queue every engine admits from (central-queue)",
}
CLASSES = (
    "queueing/capacity",
    "prefill interference",
    "KV-cache pressure",
    "core imbalance",
    "mapping fallback",
    "compute-bound iteration",
)
DRIVER_OF = {
    "prefill interference": "prefill_interference",
    "KV-cache pressure": "preemption",
    "core imbalance": "imbalance",
    "mapping fallback": "fallback",
}
CONCURRENT_MAX_REQUESTS = 250_000
"""Above this many requests the re-runs go one at a time: each one in flight holds a whole
serving result (~130 bytes per request plus 48 per iteration: model/runtime/README.md
"Memory"), so a run near the 1,000,000-request serving cap keeps about two results alive, not
three."""
OWN_PART = {"prefill_interference": "prefill_interference", "preemption": "preemption"}
"""The composition part a driver's switch-off removes directly (imbalance and fallback have none:
their whole effect shows as waiting or slower iterations)."""


def all_compiled_shapes(compiled: list[int] | None, biggest_chunk: int) -> list[int] | None:
    """The compiled seq_len buckets plus every table bucket above the largest (up to
    `biggest_chunk` tokens): each chunk that fell back then runs compiled at its own bucket,
    and every other chunk keeps the bucket it had. None (every length compiled) stays None."""
    if not compiled:
        return None
    largest = max(compiled)
    above = [int(e) for e in bucket_edges(biggest_chunk) if e > largest]
    return sorted(set(int(c) for c in compiled) | set(above))


def compiled_everywhere(table: IterationTable, all_compiled: IterationTable) -> IterationTable:
    """`table` with its generic-path prefill buckets priced as `all_compiled` prices them (same
    edges); every other entry is `table`'s own, bit for bit, so a run that never fell back is
    unchanged."""
    if not np.array_equal(table.p_edges, all_compiled.p_edges):
        raise ValueError("the all-compiled iteration table has other prefill buckets")
    fallback = table.pre_fallback if table.pre_fallback is not None else np.zeros(0, bool)
    if not fallback.any():
        return table
    pre = np.where(fallback, all_compiled.pre_attn_ms, table.pre_attn_ms)
    return dataclasses.replace(table, pre_attn_ms=pre, pre_fallback=np.zeros_like(fallback))


def active_drivers(result: ServingResult, table: IterationTable | None) -> tuple[str, ...]:
    """Drivers whose switch-off can change some run (the others get exactly 0)."""
    cfg = result.config
    pinned = cfg.service.source == "distribution" or table is None
    active = []
    if not pinned and cfg.policy.max_num_seqs >= 2:  # a decode step beside a prefill chunk
        active.append("prefill_interference")
    kv = cfg.policy.kv_cache_tokens
    if kv is not None and kv < cfg.policy.max_num_seqs * cfg.longest_sequence:
        active.append("preemption")  # else every running set fits: the limit never binds
    if not pinned and table.pre_fallback is not None and bool(table.pre_fallback.any()):
        active.append("fallback")
    if cfg.placement != "central-queue" and cfg.hardware.cores > 1:
        active.append("imbalance")
    return tuple(active)


def acted(result: ServingResult, table: IterationTable | None, off: frozenset[str]) -> frozenset:
    """Drivers (not in `off`) that did something in this run: switching one that did not off
    gives the same run, bit for bit (so its re-run is skipped)."""
    it = result.iterations
    out = {"imbalance"}  # no cheap proof that pooling the queues changes nothing
    if "prefill_interference" not in off and bool(
        np.any((it.decode_seqs > 0) & (it.prefill_tokens > 0))
    ):
        out.add("prefill_interference")
    if result.kv_limited > 0:
        out.add("preemption")
    has = it.prefill_tokens > 0
    if table is not None and table.pre_fallback is not None and has.any():
        buckets = np.searchsorted(table.p_edges, it.prefill_tokens[has])
        if bool(np.any(table.pre_fallback[buckets])):
            out.add("fallback")
    return frozenset(out - off)


def tails(result: ServingResult) -> dict[str, tuple[float, float] | None]:
    """(p95, p99) of latency, TTFT and TPOT over the measured requests, ms (None: no value,
    e.g. TPOT when every output is one token)."""
    r, m = result.requests, result.measured
    out: dict[str, tuple[float, float] | None] = {}
    for name, values in (("latency", r.latency_ms), ("ttft", r.ttft_ms), ("tpot", r.tpot_ms)):
        v = values[m]
        v = v[np.isfinite(v)]
        if len(v) == 0:
            out[name] = None
        else:
            p95, p99 = np.percentile(v, [95.0, 99.0])
            out[name] = (float(p95), float(p99))
    return out


def switched_off(
    result: ServingResult,
    table: IterationTable | None,
    all_compiled: IterationTable | None,
    off: frozenset[str],
) -> ServingResult:
    """The run again on the same stream with the drivers in `off` switched off."""
    cfg = result.config
    if "preemption" in off:
        cfg = dataclasses.replace(cfg, policy=dataclasses.replace(cfg.policy, kv_cache_tokens=None))
    if "imbalance" in off:
        cfg = dataclasses.replace(cfg, placement="central-queue")
    if "fallback" in off and table is not None:
        if all_compiled is None:
            raise ValueError("the fallback counterfactual needs the all-compiled iteration table")
        table = compiled_everywhere(table, all_compiled)
    decode_alone = "prefill_interference" in off
    return simulate_serving(cfg, table, result.stream, decode_alone=decode_alone)


@dataclass(frozen=True)
class Outcome:
    """One counterfactual run: its tails (see `tails`) and the drivers that acted in it."""

    tails: dict[str, tuple[float, float] | None]
    acted: frozenset


def counterfactual_runs(
    result: ServingResult,
    table: IterationTable | None,
    all_compiled: IterationTable | None,
    drivers: tuple[str, ...],
    *,
    workers: int = COUNTERFACTUAL_WORKERS,
) -> tuple[dict[frozenset, Outcome], int]:
    """The outcome of every subset of `drivers` switched off, and how many re-runs it took.

    Level by level (subsets of one driver, then two, ...): a subset whose run is provably the
    run of a smaller subset (the extra driver did not act there) reuses it; the others run on
    a pool of `workers` threads (the kernel releases the GIL; one above CONCURRENT_MAX_REQUESTS
    requests). `map` returns in subset order
    and reused runs are bit-identical, so the outcome does not depend on the pool.
    """
    done = {frozenset(): Outcome(tails(result), acted(result, table, frozenset()))}
    runs = 0
    if len(result.stream.arrival_ms) > CONCURRENT_MAX_REQUESTS:
        workers = 1

    def run(off: frozenset[str]) -> Outcome:
        tab = table
        if "fallback" in off and table is not None and all_compiled is not None:
            tab = compiled_everywhere(table, all_compiled)
        rerun = switched_off(result, table, all_compiled, off)
        return Outcome(tails(rerun), acted(rerun, tab, off))

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for size in range(1, len(drivers) + 1):
            todo = []
            for subset in combinations(drivers, size):
                off = frozenset(subset)
                same = next((d for d in subset if d not in done[off - {d}].acted), None)
                if same is None:
                    todo.append(off)
                else:
                    done[off] = done[off - {same}]
            for off, outcome in zip(todo, pool.map(run, todo), strict=True):
                done[off] = outcome
            runs += len(todo)
    return done, runs


def serving_counterfactual(
    result: ServingResult,
    table: IterationTable | None,
    all_compiled: IterationTable | None = None,
    *,
    workers: int = COUNTERFACTUAL_WORKERS,
) -> dict[str, Any]:
    """Shapley split over the active drivers of the drop of p95 and p99 of latency, TTFT and
    TPOT when every driver is off, ms (the `tail_attribution_ms.counterfactual` contract).

    A driver that cannot act gets exactly 0; the values of each percentile sum to
    `p99_ms - p99_all_off_ms` (to rounding). `runs`: kernel re-runs made; `subsets`: 2^k.
    """
    drivers = active_drivers(result, table)
    if "fallback" in drivers and all_compiled is None:
        raise ValueError("the fallback counterfactual needs the all-compiled iteration table")
    done, runs = counterfactual_runs(result, table, all_compiled, drivers, workers=workers)
    everything = frozenset(drivers)
    out: dict[str, Any] = {"drivers": list(drivers)}
    for metric in METRICS:
        if done[frozenset()].tails[metric] is None:
            out[metric] = None
            continue
        block: dict[str, Any] = {}
        for index, name in ((1, "p99"), (0, "p95")):
            values = {off: o.tails[metric][index] for off, o in done.items()}
            split = shapley_values(values, drivers)
            block[f"{name}_ms"] = values[frozenset()]
            block[f"{name}_all_off_ms"] = values[everything]
            block[f"{name}_drop_if_off_ms"] = {d: float(split.get(d, 0.0)) for d in DRIVERS}
        out[metric] = block
    out["subsets"] = 2 ** len(drivers)
    out["runs"] = runs
    out["off_means"] = {d: OFF_MEANS[d] for d in DRIVERS}
    return out


def class_scores(group: dict[str, float], drops_ms: dict[str, float]) -> dict[str, float]:
    """Score of each serving class on one group of requests (a composition of
    `serving_summary`'s tail_attribution_ms): its share of the group's mean latency.

    Prefill interference and KV-cache pressure: their own part plus `excess`, the part of their
    Shapley drop beyond it (the queueing they caused); core imbalance and mapping fallback:
    their drop (no part of their own). The excesses and those drops come out of queueing, so
    queueing/capacity keeps the waiting no driver explains; compute-bound iteration is the
    requests' own prefill and decode at the plan's speed, less the part of the fallback drop
    that queueing cannot hold (the generic path's slower prefill is in the requests' own
    prefill time).
    """
    total = group["latency_ms"]
    if total <= 0:
        return dict.fromkeys(CLASSES, 0.0)
    share = {k: group[k] / total for k in ("queueing", "prefill", "decode", *OWN_PART.values())}
    effect = {}
    for d in DRIVERS:
        own = share[OWN_PART[d]] if d in OWN_PART else 0.0
        effect[d] = max(0.0, drops_ms.get(d, 0.0) / total - own)
    beyond_queueing = max(0.0, sum(effect.values()) - share["queueing"])
    return {
        "queueing/capacity": max(0.0, share["queueing"] - sum(effect.values())),
        "prefill interference": share["prefill_interference"] + effect["prefill_interference"],
        "KV-cache pressure": share["preemption"] + effect["preemption"],
        "core imbalance": effect["imbalance"],
        "mapping fallback": effect["fallback"],
        "compute-bound iteration": max(
            0.0, share["prefill"] + share["decode"] - min(beyond_queueing, effect["fallback"])
        ),
    }


def engine_utilization(result: ServingResult) -> np.ndarray:
    """(engines,) busy fraction of each engine from the first arrival to the last finish."""
    it, r = result.iterations, result.requests
    span = float(np.max(r.finish_ms) - np.min(r.arrival_ms)) if len(r.finish_ms) else 0.0
    busy = np.bincount(
        it.engine, weights=it.end_ms - it.start_ms, minlength=int(result.config.hardware.cores)
    )
    return busy / span if span > 0 else np.zeros_like(busy)


def classify_serving(
    result: ServingResult,
    composition: dict[str, dict[str, float]],
    counterfactual: dict[str, Any],
    command: str,
    *,
    prefill_fallback_rate: float | None = None,
) -> dict[str, Any]:
    """Primary and secondary serving bottleneck classes with their evidence (the
    `classification` contract; the same rules as model.runtime.bottleneck.classify).

    composition: `serving_summary(...)["tail_attribution_ms"]` (slowest_1pct, slowest_5pct,
    all_measured); counterfactual: `serving_counterfactual` output.
    """
    latency = counterfactual["latency"]
    p99 = class_scores(composition["slowest_1pct"], latency["p99_drop_if_off_ms"])
    p95 = class_scores(composition["slowest_5pct"], latency["p95_drop_if_off_ms"])
    avg = class_scores(composition["all_measured"], {})
    r, m = result.requests, result.measured
    utilization = engine_utilization(result)
    tail = composition["slowest_1pct"]

    def extra(name: str) -> dict[str, Any]:
        evidence: dict[str, Any] = {}
        driver = DRIVER_OF.get(name)
        if driver is not None:
            for metric in METRICS:
                block = counterfactual[metric]
                if block is not None:
                    drop = block["p99_drop_if_off_ms"][driver]
                    evidence[f"{metric}_p99_drop_if_{driver}_off_ms"] = round(drop, 4)
        if name == "queueing/capacity":
            evidence["queueing_share_p99_tail"] = round(tail["queueing"] / tail["latency_ms"], 4)
            evidence["engine_utilization_mean"] = round(float(np.mean(utilization)), 4)
        elif name == "KV-cache pressure":
            evidence["preemptions"] = int(r.preemptions[m].sum())
            evidence["preempted_requests"] = int((r.preemptions[m] > 0).sum())
            evidence["kv_limit_hits"] = int(result.kv_limited)
        elif name == "core imbalance":
            evidence["engine_utilization_min"] = round(float(np.min(utilization)), 4)
            evidence["engine_utilization_max"] = round(float(np.max(utilization)), 4)
        elif name == "mapping fallback" and prefill_fallback_rate is not None:
            evidence["prefill_fallback_rate"] = round(prefill_fallback_rate, 4)
        elif name == "compute-bound iteration":
            evidence["prefill_share_p99_tail"] = round(tail["prefill"] / tail["latency_ms"], 4)
            evidence["decode_share_p99_tail"] = round(tail["decode"] / tail["latency_ms"], 4)
            it = result.iterations
            evidence["iteration_ms_mean"] = round(float(np.mean(it.end_ms - it.start_ms)), 4)
        return evidence

    return ranked_classification(CLASSES, p99, p95, avg, tail["latency_ms"], extra, command)


def with_attribution(
    summary: dict[str, Any],
    result: ServingResult,
    table: IterationTable | None,
    all_compiled: IterationTable | None = None,
    *,
    workers: int = COUNTERFACTUAL_WORKERS,
) -> dict[str, Any]:
    """`summary` (a `serving_summary`) with `tail_attribution_ms.counterfactual` and
    `classification` (just before `command`); the input dict is not changed."""
    counterfactual = serving_counterfactual(result, table, all_compiled, workers=workers)
    composition = summary["tail_attribution_ms"]
    classification = classify_serving(
        result,
        composition,
        counterfactual,
        summary.get("command", ""),
        prefill_fallback_rate=summary.get("prefill_fallback_rate"),
    )
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if key == "command":
            out["classification"] = classification
        out[key] = value
    out["tail_attribution_ms"] = {**composition, "counterfactual": counterfactual}
    out.setdefault("classification", classification)
    return out
