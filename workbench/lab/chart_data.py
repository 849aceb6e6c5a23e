"""What a chart shows, as plain data (textual-free): series, labels, reference lines.

The lab's chart builders (`workbench.lab.charts`) return `ChartData`; the `Chart` widget draws
it and keeps it, so tests read exactly what is plotted. Instances compare by identity (they hold
arrays): a chart redraws whenever it is handed new data.
"""

from __future__ import annotations

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
        hlines: y values drawn as horizontal reference lines (lines only), e.g. an SLA.
        xticks: (x, label) pairs replacing the automatic x ticks (lines only).
    """

    kind: Literal["lines", "bars", "hbars"]
    title: str
    series: tuple[Series, ...]
    categories: tuple[str, ...] = ()
    xlabel: str = ""
    ylabel: str = ""
    hlines: tuple[float, ...] = field(default=())
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
