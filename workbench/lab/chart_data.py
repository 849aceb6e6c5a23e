"""What a chart shows, as plain data (textual-free): series, labels, reference lines.

The lab's chart builders (`workbench.lab.charts`) return `ChartData`; the `Chart` widget draws
it and keeps it, so tests read exactly what is plotted. Instances compare by identity (they hold
arrays): a chart redraws whenever it is handed new data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np


@dataclass(frozen=True, eq=False)
class Series:
    """One plotted series.

    Attributes:
        label: legend text.
        x: (N,) x values (numbers), or empty for bars (they use `ChartData.categories`).
        y: (N,) y values.
        peaks: reduce by keeping each interval's maximum (bursts stay visible) instead of
            picking evenly spaced points.
    """

    label: str
    x: np.ndarray
    y: np.ndarray
    peaks: bool = False


@dataclass(frozen=True, eq=False)
class ChartData:
    """What a chart shows.

    Attributes:
        kind: "lines" (x/y series), "bars" (one bar per category per series) or "hbars"
            (horizontal bars, categories listed top to bottom).
        title: shown above the plot (say the unit).
        series: the data.
        categories: bar labels (bars only).
        xlabel, ylabel: axis labels ('' for none).
        hlines: y values drawn as horizontal reference lines (lines only), e.g. an SLA; each
            is also a y tick labelled with its value, so the line sits on its own number.
        hline_labels: what each reference line is (the legend says 'p99 SLA 76'); '' or
            missing entries: the value alone.
        hline_name: what the reference lines are, in a word ('SLA'), for a legend short
            enough to share the title row ('' none).
        xticks: (x, label) pairs replacing the automatic x ticks (lines only).
    """

    kind: Literal["lines", "bars", "hbars"]
    title: str
    series: tuple[Series, ...]
    categories: tuple[str, ...] = ()
    xlabel: str = ""
    ylabel: str = ""
    hlines: tuple[float, ...] = field(default=())
    hline_labels: tuple[str, ...] = field(default=())
    hline_name: str = ""
    xticks: tuple[tuple[float, str], ...] = field(default=())

    def values(self, label: str) -> np.ndarray:
        """The y values of the series called `label` (KeyError when there is none)."""
        for series in self.series:
            if series.label == label:
                return series.y
        raise KeyError(f"no series '{label}' (series: {', '.join(s.label for s in self.series)})")


def reduce_points(
    x: np.ndarray, y: np.ndarray, points: int, *, peaks: bool
) -> tuple[np.ndarray, np.ndarray]:
    """At most `points` (x, y) pairs: each interval's maximum with `peaks`, else evenly
    spaced samples (first and last kept)."""
    n = len(x)
    if n <= points or points < 2:
        return x, y
    if peaks:
        starts = np.linspace(0, n, points, endpoint=False).astype(np.int64)
        return x[starts], np.maximum.reduceat(y, starts)
    picks = np.unique(np.linspace(0, n - 1, points).round().astype(np.int64))
    return x[picks], y[picks]


NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)  # tick steps people read at a glance, per decade


def nice_step(span: float, count: int) -> float:
    """The smallest round step (1, 2, 2.5 or 5 times a power of ten) that splits `span` into
    at most `count` intervals."""
    if not math.isfinite(span) or span <= 0 or count < 1:
        return 1.0
    raw = span / count
    decade = 10.0 ** math.floor(math.log10(raw))
    return next(m * decade for m in NICE_STEPS if m * decade >= raw * (1 - 1e-9))


def tick_label(value: float) -> str:
    """A tick's text: at most 4 significant digits, no trailing zeros ('62.5', '100', '0.25')."""
    return f"{round(value, 9):.4g}".replace("e+0", "e").replace("e+", "e")


def nice_ticks(lo: float, hi: float, count: int) -> tuple[float, float, tuple[float, ...]]:
    """Axis limits widened to round values around [lo, hi] and the round ticks between them
    (at most `count` intervals): (lower limit, upper limit, ticks)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    step = nice_step(hi - lo, count)
    start, stop = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    ticks = tuple(round(k * step, 9) for k in range(start, stop + 1))
    return ticks[0], ticks[-1], ticks
