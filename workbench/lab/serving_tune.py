"""Tune's Pareto and candidates views on a serving packet, as plain data.

Textual-free. A serving packet's plan is judged on what the continuous scheduler makes of it,
so these views read the serving runs the lab already caches (`Lab.serving_run`; the serving
worksheet is the lab's too, `Lab.serving_worksheet`):

- `serving_pareto_chart`: the search's front as TPOT p95 against TTFT p95 with both SLA targets
  as labelled lines;
- `compare_serving`: a candidate's serving headline against the baseline's.

Times ms, rates per second.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from packets.schema import Packet
from workbench.lab.chart_data import ChartData, Series
from workbench.lab.engine import ServingRun
from workbench.lab.views import meets_sla

LOG_TICKS = (1.0, 2.0, 5.0)
"""Tick multiples per decade on the Pareto chart's log TTFT axis."""


def log_ticks(low: float, high: float, most: int = 6) -> tuple[tuple[float, str], ...]:
    """(log10 position, label) ticks for values from `low` to `high` (> 0): 1-2-5 per decade,
    decades alone when those are more than `most`, the two ends when fewer than two fall
    inside."""
    from workbench.lab.chart_data import tick_label

    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    values = [m * 10.0**e for e in range(first, last + 1) for m in LOG_TICKS]
    inside = [v for v in values if low * (1 - 1e-9) <= v <= high * (1 + 1e-9)]
    if len(inside) > most:
        inside = [v for v in inside if math.log10(v) == round(math.log10(v))]
    if len(inside) < 2:
        inside = [low, high] if high > low else [low]
    return tuple((math.log10(v), tick_label(float(f"{v:.3g}"))) for v in inside)


def serving_pareto_chart(front: Sequence, packet: Packet) -> ChartData:
    """The search's Pareto front on a serving packet (triage.search.pareto_front: TPOT p95
    against TTFT p95), ms, TTFT on a log scale (a front spans from tens of ms to minutes of
    queueing); the TPOT p95 target as a labelled line and the TTFT p95 target as a labelled
    upright line (a two-point series at its value, spanning the plotted TPOT range). Labels
    are short: at 80 columns the legend shares the title row."""
    rows = sorted((t.row["ttft_p95_ms"], t.row["tpot_p95_ms"]) for t in front)
    x = np.asarray([r[0] for r in rows], dtype=np.float64)
    y = np.asarray([r[1] for r in rows], dtype=np.float64)
    sla = packet.inputs.sla
    ttft, tpot = sla.ttft_p95_ms, sla.tpot_p95_ms
    series = [Series("front", np.log10(x), y)]
    shown = list(x)
    if ttft is not None and len(y):
        span = [float(y.min()), float(y.max()), *([float(tpot)] if tpot is not None else [])]
        series.append(
            Series(
                f"TTFT SLA {ttft:g}",
                np.full(2, math.log10(ttft)),
                np.asarray([min(span), max(span)], dtype=np.float64),
            )
        )
        shown.append(float(ttft))
    return ChartData(
        kind="lines",
        title="TPOT vs TTFT p95, ms (log)",
        series=tuple(series),
        hlines=(float(tpot),) if tpot is not None else (),
        hline_labels=(f"TPOT SLA {tpot:g}",) if tpot is not None else (),
        hline_name="SLA" if tpot is not None else "",
        xticks=log_ticks(min(shown), max(shown)) if shown else (),
    )


@dataclass(frozen=True)
class ServingComparison:
    """A configuration's serving headline against the baseline's (ms, per second; changes
    signed; None where the run has no such figure, e.g. no output past the first token).

    Attributes:
        name: the configuration's label.
        ttft_p95_ms, ttft_p99_ms, tpot_p95_ms, tpot_p99_ms, latency_p99_ms: tails, ms.
        tokens_per_s: output tokens per second. preemptions: KV-cache preemptions.
        changes: the same keys' differences from the baseline's.
        meets_sla: every serving SLA target the packet sets holds (latency p95/p99, TTFT p95,
            TPOT p95).
        misses: the targets it misses ('TTFT p95', ...).
    """

    name: str
    ttft_p95_ms: float | None
    ttft_p99_ms: float | None
    tpot_p95_ms: float | None
    tpot_p99_ms: float | None
    latency_p99_ms: float | None
    tokens_per_s: float | None
    preemptions: int
    changes: dict
    meets_sla: bool
    misses: tuple[str, ...]


SLA_LABELS = (("p95_ok", "p95"), ("p99_ok", "p99"), ("ttft_p95_ok", "TTFT p95"),
              ("tpot_p95_ok", "TPOT p95"))  # fmt: skip
"""Serving SLA verdict keys and how each miss is named."""


def _figures(summary: dict) -> dict:
    return {
        "ttft_p95_ms": summary["ttft_ms"]["p95"],
        "ttft_p99_ms": summary["ttft_ms"]["p99"],
        "tpot_p95_ms": summary["tpot_ms"]["p95"],
        "tpot_p99_ms": summary["tpot_ms"]["p99"],
        "latency_p99_ms": summary["latency_ms"]["p99"],
        "tokens_per_s": summary["tokens_per_s"],
        "preemptions": summary["preemptions"],
    }


def compare_serving(run: ServingRun, baseline: ServingRun) -> ServingComparison:
    """`run`'s serving headline and its changes against `baseline`'s."""
    now, then = _figures(run.summary), _figures(baseline.summary)
    changes = {k: (None if now[k] is None or then[k] is None else now[k] - then[k]) for k in now}
    sla = run.summary["sla"]
    return ServingComparison(
        name=run.name,
        **now,
        changes=changes,
        meets_sla=meets_sla(run.summary),
        misses=tuple(label for key, label in SLA_LABELS if sla.get(key) is False),
    )
