"""Bottleneck classification of one run: a primary class plus secondaries, tail first.

Each class gets a score: its share of the latency of the slowest 1% of measured requests (the
p99 tail), from the additive composition in `model.runtime.tail`. For the three classes that have a
counterfactual (core imbalance <- placement, mapping fallback <- fallback, memory bandwidth <-
contention) the score adds the queueing the driver induced: the part of its Shapley p99 drop
beyond its own component (`excess`), which is moved out of queueing/capacity's score. So
queueing/capacity keeps only the queueing that no driver explains. The same scores are
computed for the slowest 5% (p95 tail) and for all requests (mean).

Rules (why: model/runtime/README.md):
- primary: the largest p99-tail score; when the runner-up is within TIE_MARGIN of it, the
  larger p95-tail score of the two decides.
- secondary: every other class whose p99-tail or p95-tail score is >= SECONDARY_SHARE.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CLASSES = (
    "queueing/capacity",
    "core imbalance",
    "mapping fallback",
    "batching delay",
    "memory bandwidth",
    "SRAM spill",
    "launch overhead",
    "compute",
)
SECONDARY_SHARE = 0.15
TIE_MARGIN = 0.05
DRIVER_OF = {"core imbalance": "placement", "mapping fallback": "fallback"}
DRIVER_OF["memory bandwidth"] = "contention"
OWN_PART = {"placement": "imbalance", "fallback": "fallback", "contention": "contention"}


def class_scores(composition: dict[str, float], drops_ms: dict[str, float]) -> dict[str, float]:
    """Score of each class: share of the group's mean latency (see the module docstring).

    composition: mean latency parts (ms) of a group of requests, with its "latency".
    drops_ms: Shapley drop (ms) of the group's percentile with each driver off.
    """
    total = composition["latency"]
    if total <= 0:
        return dict.fromkeys(CLASSES, 0.0)
    share = {k: v / total for k, v in composition.items() if k not in ("latency", "requests")}
    excess = {d: max(0.0, drops_ms.get(d, 0.0) / total - share[OWN_PART[d]]) for d in OWN_PART}
    memory = share["memory"] + share["contention"] - share["spill"]
    return {
        "queueing/capacity": max(0.0, share["queueing"] - sum(excess.values())),
        "core imbalance": share["imbalance"] + excess["placement"],
        "mapping fallback": share["fallback"] + excess["fallback"],
        "batching delay": share["batching"],
        "memory bandwidth": memory + excess["contention"],
        "SRAM spill": share["spill"],
        "launch overhead": share["launch"],
        "compute": share["compute"],
    }


def classify(
    tail_p99: dict[str, float],
    tail_p95: dict[str, float],
    mean: dict[str, float],
    counterfactual: dict,
    command: str,
    *,
    utilization_mean: float | None = None,
) -> dict:
    """Primary and secondary bottleneck classes with the evidence that decided them.

    Args:
        tail_p99, tail_p95, mean: compositions (model.runtime.tail.slowest_composition at 0.01 and
            0.05, mean_composition).
        counterfactual: model.runtime.tail.counterfactual_attribution output.
        command: the exact command that reproduces the run (e.g. `workbench run P --seed 7`).
        utilization_mean: mean core utilization (evidence for queueing/capacity).
    """
    p99 = class_scores(tail_p99, counterfactual["p99_drop_if_off_ms"])
    p95 = class_scores(tail_p95, counterfactual["p95_drop_if_off_ms"])

    def extra(name: str) -> dict:
        evidence = {}
        if name in DRIVER_OF:
            drop = counterfactual["p99_drop_if_off_ms"].get(DRIVER_OF[name], 0.0)
            evidence[f"p99_drop_if_{DRIVER_OF[name]}_off_ms"] = round(drop, 4)
        if name == "queueing/capacity" and utilization_mean is not None:
            evidence["core_utilization_mean"] = round(utilization_mean, 4)
        return evidence

    return ranked_classification(
        CLASSES, p99, p95, class_scores(mean, {}), tail_p99["latency"], extra, command
    )


def ranked_classification(
    classes: tuple[str, ...],
    p99: dict[str, float],
    p95: dict[str, float],
    mean: dict[str, float],
    p99_tail_latency_ms: float,
    extra_evidence: Callable[[str], dict[str, Any]],
    command: str,
) -> dict[str, Any]:
    """The `classification` contract from per-class scores, by the module's rules (shared by
    the dynamic batcher's `classify` and the serving one, model/runtime/serving_attribution.py).

    Args:
        classes: class names in their tie order.
        p99, p95, mean: each class's p99-tail, p95-tail and mean score (shares, 0-1).
        p99_tail_latency_ms: mean latency of the slowest 1%, ms.
        extra_evidence: a class's own evidence, after the scores (in the order given).
        command: the exact command that reproduces the run.
    """
    ranked = sorted(classes, key=lambda c: (-p99[c], classes.index(c)))
    primary, tie_break = ranked[0], False
    if p99[ranked[0]] - p99[ranked[1]] <= TIE_MARGIN and p95[ranked[1]] > p95[ranked[0]]:
        primary, tie_break = ranked[1], True

    def entry(name: str, rule: str) -> dict[str, Any]:
        evidence = {
            "p99_tail_score": round(p99[name], 4),
            "p95_tail_score": round(p95[name], 4),
            "mean_share": round(mean[name], 4),
            "p99_tail_latency_ms": round(p99_tail_latency_ms, 4),
            **extra_evidence(name),
        }
        return {
            "class": name,
            "metric": "p99_tail_score",
            "value": round(p99[name], 4),
            "threshold": rule,
            "evidence": evidence,
            "command": command,
        }

    primary_rule = f"largest p99-tail score (p95-tail decides within {TIE_MARGIN})"
    if tie_break:
        primary_rule += f"; p95 tie-break over {ranked[0]}"
    secondary_rule = f"p99- or p95-tail score >= {SECONDARY_SHARE}"
    secondary = [
        entry(c, secondary_rule)
        for c in ranked
        if c != primary and max(p99[c], p95[c]) >= SECONDARY_SHARE
    ]
    return {
        "primary": entry(primary, primary_rule),
        "secondary": secondary,
        "scores_p99_tail": {c: round(p99[c], 4) for c in classes},
        "thresholds": {"secondary_share": SECONDARY_SHARE, "tie_margin": TIE_MARGIN},
    }
