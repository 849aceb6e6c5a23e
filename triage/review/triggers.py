"""Default rollback triggers, derived from the SLA and the validation matrix's margins.

Metric names are those of `workbench run --json` (latency_ms.p99, fallback_rate, ...), so a
monitoring system can evaluate the same figures. Windows follow the usual alerting practice of
sustained breaches: 5 minutes for the hard SLA tail, longer for early warnings. Editable: the
app and a hand edit may change any of them; review guards only require that some exist.

A serving packet's matrix adds its SLA's TTFT p95 and TPOT p95 as revert triggers
(`ttft_ms.p95`, `tpot_ms.p95`), pages on a preemption rate above what validation saw
(`preemption_rate`: preemptions per measured request), and names its fallback figure
`prefill_fallback_rate`, as `workbench run --json` does for such a run.
"""

from __future__ import annotations

from packets.candidates import resolve_dtype
from packets.schema import Packet, RollbackTrigger, ValidationMatrix
from triage.review.common import PRODUCTION

REVERT = "revert to config 'baseline'"


def _production_cells(matrix: ValidationMatrix, config: str) -> list:
    return [
        c for c in matrix.cells
        if c.config == config and c.load_factor == 1.0 and c.shape_mix == PRODUCTION
    ] or [c for c in matrix.cells if c.config == config and c.load_factor == 1.0]  # fmt: skip


def default_triggers(packet: Packet, matrix: ValidationMatrix) -> list[RollbackTrigger]:
    """Triggers for the matrix's candidate: hard SLA breaches revert; margins warn early."""
    sla = packet.inputs.sla
    cells = _production_cells(matrix, matrix.candidate) or [
        c for c in matrix.cells if c.config == matrix.candidate
    ]
    worst_p99 = max(c.p99_ms for c in cells)
    triggers = [
        RollbackTrigger(metric="latency_ms.p99", comparison=">", threshold=sla.p99_ms,
                        window_s=300.0, action=REVERT, derived_from="SLA p99_ms"),
        RollbackTrigger(metric="latency_ms.p95", comparison=">", threshold=sla.p95_ms,
                        window_s=600.0, action=REVERT, derived_from="SLA p95_ms"),
    ]  # fmt: skip
    if worst_p99 < sla.p99_ms:
        # Early warning halfway between the worst validated p99 and the SLA.
        early = worst_p99 + 0.5 * (sla.p99_ms - worst_p99)
        triggers.append(
            RollbackTrigger(
                metric="latency_ms.p99",
                comparison=">",
                threshold=round(early, 3),
                window_s=900.0,
                action="page the runtime owner (p99 margin half used)",
                derived_from=f"matrix: worst production p99 {worst_p99:.3f} ms, SLA {sla.p99_ms} ms",
            )
        )
    serving = any(c.ttft_p95_ms is not None for c in cells)
    if serving:
        triggers += _serving_triggers(packet, cells)
    fallback = max(c.fallback_rate for c in cells)
    triggers.append(
        RollbackTrigger(
            metric="prefill_fallback_rate" if serving else "fallback_rate",
            comparison=">",
            threshold=round(fallback * 1.5 + 0.01, 4),
            window_s=900.0,
            action="page the compiler owner: shapes outside the validated buckets",
            derived_from=f"matrix: production fallback rate {fallback:.4f} (x1.5 + 0.01)",
        )
    )
    peaks = [c.hbm_peak_demand_ratio for c in cells if c.hbm_peak_demand_ratio is not None]
    if peaks:
        triggers.append(
            RollbackTrigger(
                metric="hbm_peak_demand_ratio",
                comparison=">",
                threshold=round(max(peaks) * 1.1, 4),
                window_s=300.0,
                action="investigate memory bursts (fusion/tiles) before they hit p95",
                derived_from=f"matrix: production peak HBM demand {max(peaks):.3f}x (+10%)",
            )
        )
    if sla.min_throughput_per_s is not None:
        triggers.append(
            RollbackTrigger(
                metric="throughput_per_s",
                comparison="<",
                threshold=sla.min_throughput_per_s,
                window_s=300.0,
                action=REVERT,
                derived_from="SLA min_throughput_per_s (a production-load floor: judge it "
                "only while the offered rate is at least the packet's)",
            )
        )
    quality = packet.inputs.precision.quality
    if resolve_dtype(packet, matrix.candidate) != packet.inputs.precision.dtype:
        triggers.append(
            RollbackTrigger(
                metric=f"quality.{quality.metric}",
                comparison="<" if quality.higher_is_better else ">",
                threshold=quality.threshold,
                window_s=60.0,
                action=f"revert to baseline precision {packet.inputs.precision.dtype}",
                derived_from="precision quality threshold (the precision change's fallback path)",
            )
        )
    return triggers


def _serving_triggers(packet: Packet, cells: list) -> list[RollbackTrigger]:
    """The serving SLA's TTFT and TPOT p95 (revert) and the validated preemption rate (page)."""
    sla = packet.inputs.sla
    triggers = [
        RollbackTrigger(metric=f"{name}_ms.p95", comparison=">", threshold=target,
                        window_s=300.0, action=REVERT, derived_from=f"SLA {name}_p95_ms")
        for name, target in (("ttft", sla.ttft_p95_ms), ("tpot", sla.tpot_p95_ms))
        if target is not None
    ]  # fmt: skip
    rates = [c.preemption_rate for c in cells if c.preemption_rate is not None]
    worst = max(rates) if rates else 0.0
    triggers.append(
        RollbackTrigger(
            metric="preemption_rate",
            comparison=">",
            threshold=round(worst * 1.5 + 0.01, 4),
            window_s=900.0,
            action="page the runtime owner: KV-cache pressure beyond what was validated",
            derived_from=f"matrix: production preemptions per request {worst:.4f} (x1.5 + 0.01)",
        )
    )
    return triggers
