"""The packet as a readable markdown report (`workbench export --format markdown`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from packets.schema import REVIEW_QUESTION, MatrixCell, TailFigures
from packets.signing.packet import VerificationReport
from triage.review.cells import miss_text
from triage.review.guards import Guard

if TYPE_CHECKING:
    from packets.load import LoadedPacket


def _tail(t: TailFigures) -> str:
    serving = ""
    if t.ttft_p95_ms is not None and t.tpot_p95_ms is not None:
        serving = f"TTFT p95 {t.ttft_p95_ms:,.2f} ms, TPOT p95 {t.tpot_p95_ms:,.2f} ms, latency "
    return (f"{serving}p99 {t.p99_ms:,.2f} ms, p95 {t.p95_ms:,.2f} ms, p50 {t.p50_ms:,.2f} ms, "
            f"mean {t.mean_ms:,.2f} ms, {t.throughput_per_s:,.1f}/s, SLA "
            f"{'met' if t.sla_ok else 'MISSED'}")  # fmt: skip


def _serving(cells: list[MatrixCell]) -> bool:
    return any(c.ttft_p95_ms is not None for c in cells)


def _cells(cells: list[MatrixCell]) -> list[str]:
    lines = [
        "| load | mix | seed | config | p99 ms | p95 ms | throughput/s | fallback | HBM peak | SLA |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for cell in cells:
        peak = "-" if cell.hbm_peak_demand_ratio is None else f"{cell.hbm_peak_demand_ratio:.2f}x"
        lines.append(
            f"| x{cell.load_factor:g} | {cell.shape_mix} | {cell.seed} | {cell.config} | "
            f"{cell.p99_ms:,.2f} | {cell.p95_ms:,.2f} | {cell.throughput_per_s:,.1f} | "
            f"{cell.fallback_rate:.3f} | {peak} | {_verdict(cell)} |"
        )
    return lines


def _serving_cells(cells: list[MatrixCell]) -> list[str]:
    """A serving matrix: TTFT and TPOT p95 first, then the latency tails (end to end)."""
    lines = [
        "| load | mix | seed | config | TTFT p95 ms | TPOT p95 ms | p99 ms | p95 ms | tokens/s "
        "| preemptions/request | KV peak | SLA |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in cells:
        kv = "-" if c.kv_peak_ratio is None else f"{c.kv_peak_ratio:.0%}"
        lines.append(
            f"| x{c.load_factor:g} | {c.shape_mix} | {c.seed} | {c.config} | "
            f"{c.ttft_p95_ms:,.2f} | {c.tpot_p95_ms:,.2f} | {c.p99_ms:,.2f} | {c.p95_ms:,.2f} | "
            f"{c.tokens_per_s or 0.0:,.0f} | {c.preemption_rate or 0.0:.3f} | {kv} | "
            f"{_verdict(c)} |"
        )
    return lines


def _verdict(cell: MatrixCell) -> str:
    """'ok', or MISSED with each metric, value and target the cell missed."""
    if cell.sla_ok:
        return "ok"
    return "MISSED" + "".join(f": {miss_text(m)}" if i == 0 else f"; {miss_text(m)}"
                              for i, m in enumerate(cell.missed))  # fmt: skip


def _inputs(loaded: LoadedPacket) -> list[str]:
    i = loaded.packet.inputs
    w, mix = i.workload, i.workload.shapes.seq_len
    arrivals = w.arrivals
    rate = f"{arrivals.rate_per_s:g}/s" if arrivals.rate_per_s else f"trace {arrivals.trace}"
    hw = i.hardware
    return [
        "## Inputs",
        "",
        f"- Block: {w.block.kind} {w.block.phase} {w.block.dtype}, hidden {w.block.hidden}, "
        f"layers {w.block.layers}",
        f"- Arrivals: {arrivals.process} {rate}; {w.requests:,} requests, "
        f"warm-up {w.warmup_fraction:.0%}",
        f"- Shapes (seq_len, {w.shape_source}): "
        + ", ".join(f"{v} ({p:.0%})" for v, p in zip(mix.values, mix.weights, strict=True)),
        f"- SLA: p95 {i.sla.p95_ms} ms, p99 {i.sla.p99_ms} ms"
        + (f", throughput >= {i.sla.min_throughput_per_s}/s" if i.sla.min_throughput_per_s else ""),
        f"- Precision: {i.precision.dtype}; {i.precision.quality.metric} threshold "
        f"{i.precision.quality.threshold}",
        f"- Metadata: compiler {i.metadata.compiler}, runtime {i.metadata.runtime}, firmware "
        f"{i.metadata.firmware}, model {i.metadata.model_revision}, power {i.metadata.power_mode}",
        f"- Hardware: {hw.preset or hw.file or 'custom'}"
        + (f" ({hw.cores} cores)" if hw.cores else "")
        + (f"; source: {hw.source}" if hw.source else ""),
        "",
    ]


def markdown_report(
    loaded: LoadedPacket, guards: list[Guard], signatures: VerificationReport
) -> str:
    """Inputs, classification with evidence, proposal, matrix, triggers, recommendation,
    guards and signatures, tail first throughout."""
    p = loaded.packet
    out = p.outputs
    lines = [f"# {p.title}", "", f"`{p.id}` - {p.topic} - primary metric: {p.anchor_metric}", ""]
    lines += ["## Owners", ""] + [
        f"- {o.role}: {o.name} <{o.principal}>"
        + (f" - artifact: {o.artifact.ref}" if o.artifact else " - artifact: missing")
        for o in p.owners
    ] + [""]  # fmt: skip
    lines += _inputs(loaded)
    c = out.classification
    lines += ["## Bottleneck classification", "", f"> {REVIEW_QUESTION}", ""]
    if c is None:
        lines += ["Not computed yet (`workbench propose`).", ""]
    else:
        lines += [
            f"**{c.primary.bottleneck}** ({c.primary.metric} = {c.primary.value}; "
            f"{c.primary.threshold}); proven by `{c.slice.command}`"
            + (f" and the artifact {c.artifact}" if c.artifact else ""),
            "",
            f"Baseline: {_tail(c.tail)}",
            "",
        ]
        lines += [f"- evidence {k}: {v}" for k, v in c.primary.evidence.items()]
        lines += [f"- secondary: {s.bottleneck} ({s.metric} = {s.value})" for s in c.secondary]
        lines.append("")
    m = out.mitigation
    lines += ["## Mitigation proposal", ""]
    if m is None:
        lines += ["None yet (`workbench propose`).", ""]
    else:
        lines += [
            f"**{m.candidate}** on {m.primary_metric}; knobs: {', '.join(m.knobs) or 'none'}"
            + (" (broad tuning bundle)" if m.broad_tuning_bundle else ""),
            "",
            m.rationale,
            "",
            f"- chosen: {_tail(m.chosen)}",
            f"- baseline: {_tail(m.baseline)}",
            f"- slice: `{m.slice.command}`",
        ]
        lines += [f"- trade-off: {t}" for t in m.trade_offs]
        lines += [f"- rejected {a.candidate}: {a.reason}" for a in m.rejected]
        lines.append("")
    v = out.validation_matrix
    lines += ["## Validation matrix", ""]
    if v is None:
        lines += ["Not run yet (`workbench validate`).", ""]
    else:
        lines += [
            f"Candidate {v.candidate}; {len(v.load_factors)} loads x {len(v.shape_mixes)} "
            f"mixes x {len(v.seeds)} seeds, {v.requests:,} requests each.",
            "",
        ]
        lines += _serving_cells(v.cells) if _serving(v.cells) else _cells(v.cells)
        lines += ["", f"Memory check: {v.memory.verdict}", ""]
    lines += ["## Rollback triggers", ""]
    lines += [
        f"- {t.metric} {t.comparison} {t.threshold:g} for {t.window_s:g} s -> {t.action} "
        f"({t.derived_from})"
        for t in out.rollback_triggers
    ] or ["None."]
    lines.append("")
    r = out.release
    lines += ["## Release recommendation", ""]
    if r is None:
        lines += ["None yet (`workbench recommend`).", ""]
    else:
        lines += [f"**{r.recommendation}** (rule: {r.rule})", ""]
        lines += [f"- {reason}" for reason in r.reasons]
        if r.override:
            lines += [f"- override by {r.override.role} ({r.override.principal}) from "
                      f"{r.computed}: {r.override.rationale}"]  # fmt: skip
        lines.append("")
    lines += ["## Review guards", ""]
    lines += [f"- [{g.status}] {g.title}: {g.detail}" for g in guards] + [""]
    lines += ["## Signatures", ""]
    lines += [f"- {s.role} ({s.principal}): {s.status} - {s.reason}" for s in signatures.roles]
    return "\n".join(lines) + "\n"
