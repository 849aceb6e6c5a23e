"""The baseline's bottleneck classification and the mitigation proposal (`workbench propose`).

Every configuration runs on the same workload slice (the packet's seed, request count, load and
production shape mix); the chosen candidate is compared with the baseline and every rejected
alternative on one primary metric, tail first. A serving packet's configurations run the
continuous scheduler (as `workbench run`); its primary metric defaults to TPOT p95
(`default_metric`), and its baseline's bottleneck is the largest part of the slowest 1%'s
latency (queueing, prefill, decode, prefill interference, preemption) unless the run's summary
carries its own classification.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packets.candidates import BASELINE, changed_knobs, find_candidate
from packets.fingerprint import inputs_sha256
from packets.schema import (
    PRIMARY_METRICS,
    Alternative,
    ClassFinding,
    Classification,
    Mitigation,
    Packet,
    TailFigures,
)
from triage.review.common import (
    default_metric,
    lower_is_better,
    metric_value,
    tail_figures,
    workload_slice,
)
from triage.runs import run_scenario, run_serving_scenario
from triage.scenario import Scenario, build_scenario

if TYPE_CHECKING:
    from packets.load import LoadedPacket

BROAD_BUNDLE_KNOBS = 3  # more knobs than this at once is a broad tuning bundle
EVIDENCE_ROLES = ("kernel-performance-owner", "runtime-lead")  # profile traces + bottleneck map
SECONDARY_SHARE = 0.10
"""A serving latency part is a secondary finding from this share of the slowest 1%'s latency."""
SERVING_PARTS = {
    "queueing": "queueing: waiting for a slot before the first iteration (load)",
    "prefill": "prefill compute (the request's own prompt)",
    "decode": "decode steps (memory-bound, at the batch's pure-decode speed)",
    "prefill_interference": "prefill interference: other prompts' tokens in its decode steps",
    "preemption": "KV-cache preemption and recompute",
}
"""Serving latency parts (model/runtime/serving_summary.py COMPOSITION) as bottleneck classes."""


def run_summary(scenario: Scenario, path: str) -> dict:
    """The run's JSON contract: the continuous scheduler for a serving configuration, else the
    dynamic batcher (as `workbench run`)."""
    if scenario.is_serving:
        return run_serving_scenario(scenario, path).summary
    return run_scenario(scenario, path).summary


def serving_classification(summary: dict) -> dict:
    """A serving run's classification from its slowest 1%'s latency parts: the largest part is
    primary, every other part of at least SECONDARY_SHARE secondary (value: share, 0-1, to 4
    places as the model's classification scores)."""
    slowest = summary["tail_attribution_ms"]["slowest_1pct"]
    total = slowest["latency_ms"] or 1.0
    evidence = {f"{p}_ms": float(slowest[p]) for p in SERVING_PARTS}
    shares = sorted(((slowest[p] / total, p) for p in SERVING_PARTS), key=lambda x: (-x[0], x[1]))

    def entry(share: float, part: str, threshold: str) -> dict:
        return {"class": SERVING_PARTS[part], "metric": f"{part} share of the slowest 1%'s "
                "latency", "value": round(share, 4), "threshold": threshold, "evidence": evidence}  # fmt: skip

    first_share, first = shares[0]
    return {
        "primary": entry(first_share, first, "largest part"),
        "secondary": [
            entry(share, part, f">= {SECONDARY_SHARE:.0%}")
            for share, part in shares[1:]
            if share >= SECONDARY_SHARE
        ],
    }


def _finding(entry: dict) -> ClassFinding:
    evidence = {k: float(v) for k, v in entry.get("evidence", {}).items()}
    return ClassFinding(
        bottleneck=entry["class"],
        metric=entry["metric"],
        value=float(entry["value"]),
        threshold=entry["threshold"],
        evidence=evidence,
    )


def _evidence_artifact(packet: Packet) -> str | None:
    for owner in packet.owners:
        if owner.role in EVIDENCE_ROLES and owner.artifact is not None:
            return owner.artifact.ref
    return None


def classify(loaded: LoadedPacket, path: str) -> Classification:
    """Run the baseline on the packet's slice and record its bottleneck classification."""
    scenario = build_scenario(loaded)
    summary = run_summary(scenario, path)
    found = summary.get("classification") or serving_classification(summary)
    return Classification(
        inputs_sha256=inputs_sha256(loaded.packet),
        primary=_finding(found["primary"]),
        secondary=[_finding(e) for e in found["secondary"]],
        tail=tail_figures(summary),
        slice=workload_slice(scenario, path),
        artifact=_evidence_artifact(loaded.packet),
    )


def _delta(metric: str, value: float, reference: float) -> str:
    unit = "/s" if not lower_is_better(metric) else " ms"
    change = (value - reference) / reference if reference else 0.0
    return (
        f"{metric.removesuffix('_ms')} {value:,.2f}{unit} vs {reference:,.2f}{unit} ({change:+.1%})"
    )


def rejection_reason(metric: str, alt: TailFigures, chosen: TailFigures, knobs: list[str]) -> str:
    """Why an alternative lost, in measured terms (tail first)."""
    a, c = metric_value(alt, metric), metric_value(chosen, metric)
    worse = a > c if lower_is_better(metric) else a < c
    parts = []
    if not alt.sla_ok and chosen.sla_ok:
        parts.append("misses the SLA the chosen candidate meets")
    if worse:
        parts.append(f"worse {_delta(metric, a, c)}")
    elif a != c:
        parts.append(f"better {_delta(metric, a, c)}, but not chosen")
    if alt.p99_ms > chosen.p99_ms and metric != "p99_ms":
        parts.append(f"worse {_delta('p99_ms', alt.p99_ms, chosen.p99_ms)}")
    for other in ("ttft_p95_ms", "tpot_p95_ms"):  # the serving trade-off, named both ways
        a_o, c_o = getattr(alt, other), getattr(chosen, other)
        if other != metric and a_o is not None and c_o is not None and a_o != c_o:
            parts.append(f"{'worse' if a_o > c_o else 'better'} {_delta(other, a_o, c_o)}")
    if len(knobs) > BROAD_BUNDLE_KNOBS:
        parts.append(f"changes {len(knobs)} knobs at once (broad tuning bundle)")
    return "; ".join(parts) or f"ties the chosen candidate on {metric}"


def propose(
    loaded: LoadedPacket,
    path: str,
    candidate: str,
    rationale: str,
    trade_offs: list[str] | None = None,
    primary_metric: str | None = None,
) -> Mitigation:
    """The mitigation proposal for `candidate` (KeyError for an unknown candidate, ValueError for
    an unknown metric, a serving metric on a packet without serving, or an empty rationale).
    `primary_metric` defaults to `default_metric` of the packet."""
    primary_metric = primary_metric or default_metric(loaded.packet)
    if primary_metric not in PRIMARY_METRICS:
        raise ValueError(f"primary metric must be one of {', '.join(PRIMARY_METRICS)}")
    if not rationale.strip():
        raise ValueError("a proposal needs a written rationale")
    packet = loaded.packet
    find_candidate(packet, candidate)
    runs: dict[str, TailFigures] = {}
    slices = {}
    for name in [BASELINE, *(c.name for c in packet.candidates)]:
        scenario = build_scenario(loaded, None if name == BASELINE else name)
        runs[name] = tail_figures(run_summary(scenario, path))
        slices[name] = workload_slice(scenario, path)
    metric_value(runs[BASELINE], primary_metric)  # ValueError: a serving metric, no serving
    knobs = changed_knobs(packet, candidate)
    chosen = runs[candidate]
    rejected = []
    for alt in packet.candidates:
        if alt.name == candidate:
            continue
        alt_knobs = changed_knobs(packet, alt.name)
        reason = rejection_reason(primary_metric, runs[alt.name], chosen, alt_knobs)
        rejected.append(
            Alternative(candidate=alt.name, knobs=alt_knobs, tail=runs[alt.name], reason=reason)
        )
    provenance = find_candidate(packet, candidate).provenance
    if provenance is not None:  # a searched candidate cites the search's own alternatives
        rejected += [
            alt.model_copy(update={"candidate": f"{candidate}/{alt.candidate}"})
            for alt in provenance.rejected
        ]
    return Mitigation(
        inputs_sha256=inputs_sha256(packet),
        candidate=candidate,
        rationale=rationale.strip(),
        trade_offs=[t.strip() for t in trade_offs or [] if t.strip()],
        primary_metric=primary_metric,
        slice=slices[candidate],
        baseline=runs[BASELINE],
        chosen=chosen,
        knobs=knobs,
        broad_tuning_bundle=len(knobs) > BROAD_BUNDLE_KNOBS,
        rejected=rejected,
    )


def ranking(mitigation: Mitigation) -> list[tuple[str, float]]:
    """The baseline, the chosen candidate and every packet alternative, best first on the
    proposal's primary metric (ties in name order): (name, value)."""
    metric = mitigation.primary_metric
    named = [("baseline", mitigation.baseline), (mitigation.candidate, mitigation.chosen)]
    named += [(a.candidate, a.tail) for a in mitigation.rejected if "/" not in a.candidate]
    sign = 1.0 if lower_is_better(metric) else -1.0
    values = [(name, metric_value(tail, metric)) for name, tail in named]
    return sorted(values, key=lambda item: (sign * item[1], item[0]))
