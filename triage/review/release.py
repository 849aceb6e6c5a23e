"""The release recommendation: ship, ship-guarded or hold, by a documented rule over the matrix.

RULE (also written into every recommendation):
  hold         if a blocking guard on the evidence fails (slices, precision, memory, matrix), or
               the candidate misses the SLA in any production-mix cell at or below production
               load, or is worse than the baseline on the primary metric at production load
               (median over seeds);
  ship-guarded if the candidate misses the SLA only above production load or in the stress
               mix, improves the primary metric by less than 5% (within run-to-run noise of a
               few percent), or a guard warns;
  ship         otherwise.
A cell misses the SLA by what its load asks (triage/review/matrix.py, `judge_cell`): p95 or
p99 above the SLA at any load, throughput below its offered rate (less the run's sampling
tolerance) at any load, or below `min_throughput_per_s` at production load and above; a
serving packet's cells also miss on TTFT p95 or TPOT p95 above the SLA's targets, and its
primary metric may be one of them (or tokens/s). Every reason names the metric, its value and
its target.
An owner may override the computed decision only with a written rationale, which is recorded
next to the computed one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from statistics import median

from packets.fingerprint import inputs_sha256
from packets.schema import CellMiss, MatrixCell, Override, Packet, Release
from triage.review.cells import NAMES, PRODUCTION_LOAD, miss_figures
from triage.review.common import (
    PRODUCTION,
    is_serving_packet,
    lower_is_better,
    metric_value,
)
from triage.review.guards import BLOCK, WARN, review_guards

MIN_IMPROVEMENT = 0.05
EVIDENCE_GUARDS = ("slices", "precision", "memory", "matrix")
RULE = (
    "hold: an evidence guard blocks, or SLA missed at <= production load on the production mix, "
    "or the primary metric is worse than baseline at production load; ship-guarded: SLA missed "
    f"only above production load or on the stress mix, improvement < {MIN_IMPROVEMENT:.0%}, or a "
    "guard warns; ship: otherwise. A cell misses when p95/p99 exceed the SLA, throughput falls "
    "short of its offered rate (less sampling tolerance) or, at load >= x1, of "
    "min_throughput_per_s"
)
SERVING_RULE = "; serving cells also miss when TTFT p95 or TPOT p95 exceed the SLA"


def _worst(values: list[float], metric: str) -> float:
    return min(values) if metric == "throughput_per_s" else max(values)


def missed_reasons(cells: list[MatrixCell]) -> list[str]:
    """One line per load, mix, metric and target missed (the worst value over seeds), naming
    the metric, its value and its target; a cell marked missed with nothing recorded (an older
    or hand-edited matrix) says so."""
    groups: dict[tuple, list[tuple[float, int]]] = {}
    for c in cells:
        for m in c.missed:
            key = (c.load_factor, c.shape_mix, m.metric, m.target, m.basis)
            groups.setdefault(key, []).append((m.value, c.seed))
    lines = []
    for (load, mix, metric, target, basis), found in groups.items():
        worst = _worst([v for v, _ in found], metric)
        seeds = [s for v, s in found if v == worst]
        figures = miss_figures(CellMiss(metric=metric, value=worst, target=target, basis=basis))
        where = f"seed {seeds[0]}" if len(found) == 1 else f"worst of {len(found)} seeds"
        lines.append(f"{NAMES[metric]} at load x{load:g} on the {mix} mix: {figures} "
                     f"({basis}; {where})")  # fmt: skip
    lines += [
        f"SLA missed at load x{c.load_factor:g} on the {c.shape_mix} mix (seed {c.seed}) with "
        "no miss recorded: re-run workbench validate"
        for c in cells
        if not c.sla_ok and not c.missed
    ]
    return lines


def _median_metric(cells, metric: str) -> float | None:
    fields = ("p99_ms", "p95_ms", "throughput_per_s", "ttft_p95_ms", "tpot_p95_ms", "tokens_per_s")
    if metric not in fields or not cells or any(getattr(c, metric) is None for c in cells):
        return None
    return median(getattr(c, metric) for c in cells)


def recommend(packet: Packet) -> tuple[str, list[str]]:
    """(decision, reasons) by RULE. The packet needs a proposal and a matrix for it."""
    guards = {g.id: g for g in review_guards(packet)}
    reasons: list[str] = []
    blocked = [g for g in guards.values() if g.id in EVIDENCE_GUARDS and g.status == BLOCK]
    if blocked:
        return "hold", [f"guard {g.id}: {g.detail}" for g in blocked]
    m, matrix = packet.outputs.mitigation, packet.outputs.validation_matrix
    cand = [c for c in matrix.cells if c.config == m.candidate]
    base = [c for c in matrix.cells if c.config == "baseline"]
    production = [c for c in cand if c.shape_mix == PRODUCTION or c.shape_mix == "packet"]
    reasons += missed_reasons([c for c in production if c.load_factor <= PRODUCTION_LOAD])
    metric = m.primary_metric
    at_prod = [c for c in cand if c.load_factor == 1.0 and c in production]
    base_prod = (
        [c for c in base if c.load_factor == 1.0 and c.shape_mix == at_prod[0].shape_mix]
        if at_prod
        else []
    )
    new, old = _median_metric(at_prod, metric), _median_metric(base_prod, metric)
    if new is None or old is None:  # p50/mean are not in the matrix: use the proposal's slice
        new, old = metric_value(m.chosen, metric), metric_value(m.baseline, metric)
    gain = (old - new) / old if lower_is_better(metric) else (new - old) / old
    if gain < 0:
        reasons.append(f"{metric} worse than baseline at production load ({new:.3f} vs {old:.3f})")
    if reasons:
        return "hold", reasons
    guarded = []
    guarded += missed_reasons(cand)  # the production cells at <= production load all passed
    if gain < MIN_IMPROVEMENT:
        guarded.append(f"{metric} improves only {gain:.1%} (< {MIN_IMPROVEMENT:.0%})")
    guarded += [f"guard {g.id} warns: {g.detail}" for g in guards.values() if g.status == WARN]
    if guarded:
        return "ship-guarded", guarded
    return "ship", [f"{metric} improves {gain:.1%} at production load; SLA met in every cell"]


def release(packet: Packet, override: Override | None = None) -> Release:
    """The Release output: the computed decision, and the override when an owner gave one."""
    decision, reasons = recommend(packet)
    return Release(
        inputs_sha256=inputs_sha256(packet),
        recommendation=override.decision if override else decision,
        computed=decision,
        rule=RULE + (SERVING_RULE if is_serving_packet(packet) else ""),
        reasons=reasons,
        override=override,
    )


def make_override(packet: Packet, role: str, decision: str, rationale: str) -> Override:
    """An owner's override (ValueError: unknown role, or no written rationale)."""
    owners = {o.role: o for o in packet.owners}
    if role not in owners:
        raise ValueError(f"no owner holds role '{role}'")
    if len(rationale.strip()) < 20:
        raise ValueError("an override needs a written rationale (at least a sentence)")
    now = datetime.now(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Override(
        role=role,
        principal=owners[role].principal,
        decision=decision,
        rationale=rationale.strip(),
        time=now,
    )
