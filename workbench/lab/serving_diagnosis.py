"""What Diagnose shows of a serving packet, as plain data (textual-free): the serving tail
against the SLA, the Shapley attribution of its p99 over the serving drivers, the bottleneck
class and its evidence, and the charts behind them. Built from the attributed serving run
(`Lab.serving_diagnosis`: the `workbench run --json` summary of a serving packet)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from packets.schema import Packet
from triage import units
from workbench.lab.chart_data import ChartData, Series
from workbench.lab.engine import ServingRun

ms = units.ms
_EMPTY = np.zeros(0)

DRIVER_LABELS = {
    "prefill_interference": "interference",
    "preemption": "preemption",
    "fallback": "fallback",
    "imbalance": "imbalance",
}
"""Short names of the serving drivers (model/runtime/serving_attribution.py DRIVERS)."""
METRICS = (("latency", "latency", "latency_ms"), ("ttft", "TTFT", "ttft_ms"))
METRICS += (("tpot", "TPOT", "tpot_ms"),)
PARTS = ("queueing", "prefill", "prefill_interference", "preemption", "decode")
"""The serving composition's parts (model/runtime/serving_summary.py COMPOSITION), in the
order a request lives them."""


@dataclass(frozen=True)
class TailCell:
    """One percentile of a serving tail figure: 'p99', its value as text, its SLA target as
    text ('' without one) and whether it holds (None without a target)."""

    percentile: str
    value: str
    target: str
    ok: bool | None


def tail_lines(summary: dict, packet: Packet) -> list[tuple[str, tuple[TailCell, ...]]]:
    """TTFT, TPOT and latency, each as (label, (p99 cell, p95 cell)) with the SLA targets that
    concern them (latency p99 and p95, TTFT p95, TPOT p95)."""
    sla, ok = packet.inputs.sla, summary["sla"]
    targets = {
        ("latency", "p99"): (sla.p99_ms, ok["p99_ok"]),
        ("latency", "p95"): (sla.p95_ms, ok["p95_ok"]),
        ("TTFT", "p95"): (sla.ttft_p95_ms, ok["ttft_p95_ok"]),
        ("TPOT", "p95"): (sla.tpot_p95_ms, ok["tpot_p95_ok"]),
    }
    out = []
    for _, label, key in (METRICS[1], METRICS[2], METRICS[0]):
        cells = []
        for p in ("p99", "p95"):
            target, holds = targets.get((label, p), (None, None))
            text = "" if target is None else f"<= {target:g}"
            cells.append(TailCell(p, ms(summary[key][p]), text, holds if target else None))
        out.append((label, tuple(cells)))
    return out


@dataclass(frozen=True)
class AttributionLine:
    """The Shapley split of one metric's p99: its value, its value with every driver off,
    and each active driver's share of the drop (ms, signed: negative helps the tail)."""

    label: str
    p99_ms: float
    all_off_ms: float
    drops_ms: tuple[tuple[str, float], ...]


def attribution_lines(summary: dict) -> list[AttributionLine]:
    """Latency, TTFT and TPOT p99 attributed over the active drivers (empty without
    attribution; a metric with no value, e.g. TPOT of one-token outputs, is left out)."""
    counterfactual = summary["tail_attribution_ms"].get("counterfactual")
    if counterfactual is None:
        return []
    out = []
    for key, label, _ in METRICS:
        block = counterfactual[key]
        if block is None:
            continue
        drops = tuple(
            (DRIVER_LABELS[d], float(block["p99_drop_if_off_ms"][d]))
            for d in counterfactual["drivers"]
        )
        out.append(AttributionLine(label, block["p99_ms"], block["p99_all_off_ms"], drops))
    return out


def evidence_text(entry: dict) -> str:
    """A class entry's evidence as 'name value, ...' (its score is said apart)."""
    return ", ".join(
        f"{k} {v:g}" for k, v in entry["evidence"].items() if k not in ("p99_tail_score",)
    )


def serving_driver_chart(run: ServingRun) -> ChartData:
    """Shapley p99 drop of each active serving driver, % of the metric's p99, one series per
    metric (latency, TTFT, TPOT); 'all off' is what is left with every driver off."""
    lines = attribution_lines(run.summary)
    drivers = [name for name, _ in lines[0].drops_ms] if lines else []
    series = []
    for line in lines:
        scale = 100.0 / line.p99_ms if line.p99_ms > 0 else 0.0
        values = [drop * scale for _, drop in line.drops_ms] + [line.all_off_ms * scale]
        series.append(Series(line.label, _EMPTY, np.asarray(values, dtype=np.float64)))
    return ChartData(
        kind="bars",
        title="p99 drop if off (Shapley), % of p99" + ("" if drivers else " (no driver can act)"),
        categories=(*drivers, "all off"),
        series=tuple(series),
    )


def serving_parts_chart(run: ServingRun) -> ChartData:
    """Where the slowest 1% and 5% of requests spent their time, s (the additive composition:
    queueing, prefill, interference, preemption, decode)."""
    composition = run.summary["tail_attribution_ms"]
    return ChartData(
        kind="bars",
        title="Latency parts of the slowest requests, s",
        categories=tuple(DRIVER_LABELS.get(p, p) for p in PARTS),
        series=tuple(
            Series(label, _EMPTY, np.array([composition[group][p] / 1e3 for p in PARTS]))
            for label, group in (("slowest 1%", "slowest_1pct"), ("slowest 5%", "slowest_5pct"))
        ),
    )
