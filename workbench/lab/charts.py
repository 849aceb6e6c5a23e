"""Chart data for the lab steps, built from lab runs (textual-free).

Each builder returns a `ChartData` whose title states the unit. Series carry the figures of the
runs exactly (no smoothing); the widget only thins them to its width, keeping peaks where the
series is bursty (HBM demand).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from packets.schema import Packet
from workbench.lab.chart_data import ChartData, Series
from workbench.lab.engine import LATENCY_PERCENTILES, LabPreview, LabRun, LoadCurve, ServingRun
from workbench.lab.views import driver_bars

_EMPTY = np.zeros(0)


def driver_chart(run: LabRun) -> ChartData:
    """Tail-latency drivers, both ways: the slowest-1% composition and the Shapley p99 drop
    (parts that are zero both ways are left out, and the title says which)."""
    bars = driver_bars(run.summary)
    keep = (bars.slowest_1pct_ms > 0) | (bars.p99_drop_ms > 0)
    zero = [part for part, kept in zip(bars.parts, keep, strict=True) if not kept]
    return ChartData(
        kind="bars",
        title="Tail drivers, ms" + (f" (0: {', '.join(zero)})" if zero else ""),
        categories=tuple(part for part, kept in zip(bars.parts, keep, strict=True) if kept),
        series=(
            Series("slowest 1%", _EMPTY, bars.slowest_1pct_ms[keep]),
            Series("p99 drop if off", _EMPTY, bars.p99_drop_ms[keep]),
        ),
    )


def wait_chart(run: LabRun) -> ChartData:
    """Queue-wait profile: measured requests per wait-time bin (bin centres in ms)."""
    p = run.profiles
    centres = (p.wait_edges_ms[:-1] + p.wait_edges_ms[1:]) / 2.0
    wait_p99 = run.summary["queue_wait_ms"]["p99"]
    return ChartData(
        kind="lines",
        title=f"Queue wait profile: requests per bin (p99 wait {wait_p99:,.1f} ms)",
        xlabel="queue wait, ms",
        series=(Series("requests", centres, p.wait_counts.astype(np.float64)),),
    )


def core_chart(run: LabRun) -> ChartData:
    """Busy share of each core, percent, with Jain's fairness index in the title."""
    util = run.profiles.core_utilization * 100.0
    return ChartData(
        kind="bars",
        title=f"Core utilization, % (Jain {run.profiles.fairness_jain:.3f})",
        categories=tuple(f"c{i}" for i in range(len(util))),
        series=(Series("busy %", _EMPTY, util),),
    )


def hbm_chart(runs: Sequence[tuple[str, LabRun | LabPreview]]) -> ChartData:
    """Requested HBM demand over bandwidth against time (1.0: saturated), peaks kept; one
    series per (label, run)."""
    series = tuple(
        Series(label, run.profiles.hbm_time_ms / 1e3, run.profiles.hbm_demand_ratio, peaks=True)
        for label, run in runs
    )
    return ChartData(
        kind="lines",
        title="HBM demand / bandwidth (above 1: memory phases stretch)",
        xlabel="time, s",
        series=series,
        hlines=(1.0,),
        hline_labels=("1: bandwidth saturated",),
        hline_name="saturated",
    )


def kv_chart(runs: Sequence[tuple[str, ServingRun]]) -> ChartData:
    """KV-cache occupancy over time, percent of all engines' capacity, one series per
    (label, run); the capacity (100%) as a labelled line, where preemption starts."""
    capacity = runs[0][1].kv_capacity_tokens if runs else None
    label = f"KV capacity {capacity:,} tokens/engine" if capacity else "KV capacity"
    return ChartData(
        kind="lines",
        title="KV-cache occupancy, % of capacity",
        xlabel="time, s",
        series=tuple(
            Series(name, run.kv_time_s, run.kv_occupancy * 100.0, peaks=True) for name, run in runs
        ),
        hlines=(100.0,),
        hline_labels=(label,),
        hline_name="capacity",
    )


def nines(percentile: np.ndarray | float) -> np.ndarray:
    """-log10(1 - p/100): p50 -> 0.3, p90 -> 1, p99 -> 2, p99.9 -> 3 (spreads the tail out)."""
    return -np.log10(1.0 - np.asarray(percentile, dtype=np.float64) / 100.0)


TAIL_TICKS = ((50.0, "p50"), (90.0, "p90"), (99.0, "p99"), (99.9, "p99.9"))


def latency_chart(
    working: LabRun | LabPreview, baseline: LabRun | LabPreview, packet: Packet
) -> ChartData:
    """Latency by percentile (the upper half of the CDF, p50 to p99.9, on a nines scale so the
    tail is spread out), baseline against the working configuration, SLA targets as lines."""
    sla = packet.inputs.sla
    x = nines(LATENCY_PERCENTILES)
    return ChartData(
        kind="lines",
        title="Latency by percentile, ms",
        series=(
            Series("baseline", x, baseline.latency_ms),
            Series("working", x, working.latency_ms),
        ),
        hlines=(sla.p95_ms, sla.p99_ms),
        hline_labels=(f"p95 SLA {sla.p95_ms:g}", f"p99 SLA {sla.p99_ms:g}"),
        hline_name="SLA",
        xticks=tuple((float(nines(p)), label) for p, label in TAIL_TICKS),
    )


def load_chart(
    curves: Sequence[tuple[str, LoadCurve]], packet: Packet, rate_per_s: float
) -> ChartData:
    """p99 against load (multiples of the packet's rate), one line per configuration."""
    sla = packet.inputs.sla
    return ChartData(
        kind="lines",
        title=f"p99 vs load, ms (1.0 = {rate_per_s:,.0f}/s)",
        xlabel="load factor",
        series=tuple(Series(label, curve.factors, curve.p99_ms) for label, curve in curves),
        hlines=(sla.p99_ms,),
        hline_labels=(f"p99 SLA {sla.p99_ms:g}",),
        hline_name="SLA",
    )


def pareto_chart(front: Sequence, packet: Packet) -> ChartData:
    """The search's Pareto front: p99 (ms) against throughput (1/s), one point per trial no
    other trial beats on both (triage.search.SearchResult.pareto), SLA p99 as a line."""
    rows = sorted((t.row["throughput_per_s"], t.row["latency_p99_ms"]) for t in front)
    x = np.asarray([r[0] for r in rows], dtype=np.float64)
    y = np.asarray([r[1] for r in rows], dtype=np.float64)
    sla = packet.inputs.sla
    return ChartData(
        kind="lines",
        title=f"Search: Pareto front, p99 ms against throughput /s (SLA p99 <= {sla.p99_ms:g})",
        xlabel="throughput, 1/s",
        series=(Series("Pareto front", x, y),),
        hlines=(sla.p99_ms,),
    )


SERVING_DISTRIBUTIONS = {
    "ttft": ("TTFT", "ttft_ms"),
    "tpot": ("TPOT", "tpot_ms"),
    "latency": ("Latency", "latency_ms"),
}
"""Serving distributions a chart shows: metric -> (title, ServingProfiles attribute)."""


def _serving_sla_lines(metric: str, packet: Packet) -> tuple[tuple[float, ...], tuple[str, ...]]:
    sla = packet.inputs.sla
    targets = {
        "ttft": (("p95", sla.ttft_p95_ms),),
        "tpot": (("p95", sla.tpot_p95_ms),),
        "latency": (("p95", sla.p95_ms), ("p99", sla.p99_ms)),
    }[metric]
    kept = [(p, v) for p, v in targets if v is not None]
    return tuple(float(v) for _, v in kept), tuple(f"{p} SLA {v:g}" for p, v in kept)


def serving_distribution_chart(
    metric: str, working: ServingRun, baseline: ServingRun, packet: Packet
) -> ChartData:
    """A serving run's TTFT, TPOT or end-to-end latency (`metric`), ms, by percentile (p50 to
    p99.9 on the nines scale, as the latency chart), baseline against the working
    configuration, the packet's serving SLA targets for it as lines."""
    title, attribute = SERVING_DISTRIBUTIONS[metric]
    hlines, labels = _serving_sla_lines(metric, packet)
    x = nines(working.profiles.percentiles)
    return ChartData(
        kind="lines",
        title=f"{title}, ms",  # short: the legend shares the title row at 80 columns
        series=(
            Series(
                "baseline",
                nines(baseline.profiles.percentiles),
                getattr(baseline.profiles, attribute),
            ),
            Series("working", x, getattr(working.profiles, attribute)),
        ),
        hlines=hlines,
        hline_labels=labels,
        hline_name="SLA" if hlines else "",
        xticks=tuple((float(nines(p)), label) for p, label in TAIL_TICKS),
    )


def queue_chart(runs: Sequence[tuple[str, ServingRun]]) -> ChartData:
    """Requests waiting for their first iteration over time (each bin's peak), one series per
    (label, run)."""
    return ChartData(
        kind="lines",
        title="Waiting requests (peak)",
        xlabel="time, s",
        series=tuple(
            Series(label, run.profiles.time_s, run.profiles.queue_peak, peaks=True)
            for label, run in runs
        ),
    )


GIB = 2.0**30


def serving_hbm_chart(runs: Sequence[tuple[str, ServingRun]]) -> ChartData:
    """HBM held on the busiest engine over time, GiB: the block's weights plus its KV cache
    (each interval's peak), one series per (label, run); the weights and the HBM size as
    labelled lines (the HBM line only when the hardware gives it)."""
    series = tuple(
        Series(
            label,
            run.profiles.time_s,
            (run.weight_bytes + run.profiles.kv_peak_tokens * run.kv_bytes_per_token) / GIB,
            peaks=True,
        )
        for label, run in runs
    )
    first = runs[0][1] if runs else None
    lines: list[tuple[float, str]] = []
    if first is not None:
        lines.append((first.weight_bytes / GIB, f"weights {first.weight_bytes / GIB:.1f} GiB"))
        if first.hbm_gib > 0:
            lines.append((first.hbm_gib, f"HBM {first.hbm_gib:g} GiB"))
    return ChartData(
        kind="lines",
        title="HBM GiB/engine",
        xlabel="time, s",
        series=series,
        hlines=tuple(v for v, _ in lines),
        hline_labels=tuple(label for _, label in lines),
        hline_name="weights/HBM" if len(lines) > 1 else "weights",
    )
