"""Charts for the lab steps, on textual-plotext, that keep the data they plot.

A `Chart` is given a `ChartData` (lines or bars, with labels) and exposes it as `data`, so
tests can read exactly what is on screen. Drawing follows the measured pitfalls (NOTES): the
figure is cleared before every rebuild (stacked series made one chart 100x slower), series are
reduced to about twice the plot's width (peaks kept for bursty series), the built frame is
cached and rebuilt only when the data, the size or the theme changed, a hidden chart is never
built (Textual does not render hidden widgets), and rebuilds are at most one per
MIN_REDRAW_S. Colours come from the app's theme (`theming.register_plot_theme`), so NO_COLOR
and 16-colour themes apply to charts too.
"""

from __future__ import annotations

import time

from plotext import _utility as plotext_utility
from rich.text import Text
from textual.app import RenderResult
from textual.timer import Timer
from textual_plotext import PlotextPlot

from workbench.core.theming import register_plot_theme
from workbench.lab.chart_data import ChartData, reduce_points


def _ordered_unique(data: object) -> list:
    """Unique items in first-seen order (what plotext's `no_duplicates` means)."""
    return list(dict.fromkeys(data))  # type: ignore[call-overload]


# plotext 5.2.8 removes duplicate points with list(set(...)), so the order it draws overlapping
# bars and labels in follows string hashing, which changes with every process: the same chart
# came out differently from run to run. The order-preserving version (plotext's own commented
# alternative) makes charts, and so snapshots, the same every time.
plotext_utility.no_duplicates = _ordered_unique

MIN_REDRAW_S = 0.05  # at most 20 rebuilds a second; a rebuild costs 4-13 ms (NOTES)
POINTS_PER_CELL = 2  # braille packs two points per cell across


class Chart(PlotextPlot):
    """A plotext chart showing one `ChartData` (`show` replaces it; `data` is what is shown).

    Attributes:
        builds: how many times the plot was rebuilt (for tests and benchmarks).
        built_at: perf_counter() of the last rebuild (benchmarks: keypress to chart).
    """

    DEFAULT_CSS = """
    Chart {
        width: 1fr;
        height: 1fr;
        min-height: 6;
    }
    """

    def __init__(self, placeholder: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data: ChartData | None = None
        self.placeholder = placeholder
        """Shown until data arrives (e.g. 'waiting for the model')."""
        self.builds = 0
        self.built_at = 0.0
        self._version = 0
        self._frame: Text | None = None
        self._frame_key: tuple | None = None
        self._last_refresh = 0.0
        self._timer: Timer | None = None

    def on_mount(self) -> None:
        # Not PlotextPlot.on_mount: it parses theme colours with Color.parse, which ANSI
        # themes break; register_plot_theme copes with them and with NO_COLOR.
        self.app.theme_changed_signal.subscribe(self, lambda _: self.refresh())

    @property
    def drawn(self) -> bool:
        """True once the current data has been built into a frame (at `built_at`)."""
        return self._frame_key is not None and self._frame_key[0] == self._version

    @property
    def pending(self) -> bool:
        """True while new data waits for its (rate-capped) redraw."""
        return self._timer is not None

    def show(self, data: ChartData | None, placeholder: str | None = None) -> None:
        """Plot `data` (None: show `placeholder` instead); redraws at most every MIN_REDRAW_S."""
        if placeholder is not None:
            self.placeholder = placeholder
        if data is self.data and placeholder is None:
            return
        self.data = data
        self._version += 1
        wait = self._last_refresh + MIN_REDRAW_S - time.perf_counter()
        if wait <= 0:
            self._redraw()
        elif self._timer is None:
            self._timer = self.set_timer(wait, self._redraw)

    def _redraw(self) -> None:
        self._timer = None
        self._last_refresh = time.perf_counter()
        self.refresh()

    def render(self) -> RenderResult:
        width, height = self.size.width, self.size.height
        key = (self._version, width, height, self.app.theme, self.app.no_color)
        if self._frame is None or key != self._frame_key:
            self._frame = self._build(width, height)
            self._frame_key = key
        return self._frame

    def _build(self, width: int, height: int) -> Text:
        data = self.data
        if data is None or width < 10 or height < 4:
            return Text(self.placeholder, style="italic")
        plt = self.plt
        plt.clear_figure()  # never stack series (NOTES: 4 ms -> 548 ms after 300 updates)
        plt.plotsize(width, height)
        plt._set_size(width, height)  # see PlotextPlot.render: resizing needs both
        plt.theme(register_plot_theme(self.app))
        plt.title(data.title)
        if data.xlabel:
            plt.xlabel(data.xlabel)
        if data.ylabel:
            plt.ylabel(data.ylabel)
        if data.kind == "lines":
            points = max(2, POINTS_PER_CELL * width)
            for series in data.series:
                x, y = reduce_points(series.x, series.y, points, peaks=series.peaks)
                plt.plot(x.tolist(), y.tolist(), label=series.label, marker="braille")
            for level in data.hlines:
                plt.hline(level)
            if data.xticks:
                plt.xticks([x for x, _ in data.xticks], [label for _, label in data.xticks])
        elif data.kind == "bars" and len(data.series) > 1:
            plt.multiple_bar(
                list(data.categories),
                [s.y.tolist() for s in data.series],
                label=[s.label for s in data.series],
            )
        elif data.kind == "bars":
            plt.bar(list(data.categories), data.series[0].y.tolist(), label=data.series[0].label)
        else:  # hbars: plotext draws the first category at the bottom, so reverse them
            values = [s.y[::-1].tolist() for s in data.series]
            labels = [s.label for s in data.series]
            categories = list(data.categories[::-1])
            if len(values) > 1:
                plt.multiple_bar(categories, values, label=labels, orientation="horizontal")
            else:
                plt.bar(categories, values[0], label=labels[0], orientation="horizontal")
        self.builds += 1
        self.built_at = time.perf_counter()
        return Text.from_ansi(plt.build())
