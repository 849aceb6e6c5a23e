"""Charts for the lab steps, on textual-plotext, that keep the data they plot.

A `Chart` is given a `ChartData` (lines or bars, with labels) and exposes it as `data`, so
tests can read exactly what is on screen. Drawing follows the measured pitfalls (NOTES): the
figure is cleared before every rebuild (stacked series made one chart 100x slower), series are
reduced to about twice the plot's width (peaks kept for bursty series), the built frame is
cached and rebuilt only when the data, the size or the theme changed, a hidden chart is never
built (Textual does not render hidden widgets), and rebuilds are at most one per
MIN_REDRAW_S. Colours come from the app's theme (`theming.register_plot_theme`), so NO_COLOR
and 16-colour themes apply to charts too; each series also has its own glyph (braille line,
dots, crosses; solid and shaded bars), so series stay apart without colour. Value axes get
round ticks (`chart_data.nice_ticks`, about one per three rows) plus one tick at each reference
line's own value (an SLA line sits on the row labelled with its target), and the legend goes in
the title row when it fits, else in a row under the plot: never over the data.

New data is built into its frame off the UI loop (`show` starts a thread for a chart on screen;
the frame is drawn once it is there): plotext's build and the ANSI decode were half of every
UI-loop stall over 35 ms in a sampled tuning session (40-55 ms each on a slow host). Each chart
has its own plotext figure, and one lock keeps its builds one at a time; a render that finds
no frame for its size (the first one, a resize, a theme change) still builds it at once. A
frame is read from plotext's cell matrices into rich Text (`figure_text`), not printed as an
ANSI string and parsed back.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import numpy as np
from plotext import _utility as plotext_utility
from rich.ansi import AnsiDecoder
from rich.style import Style
from rich.text import Text
from textual.app import RenderResult
from textual.timer import Timer
from textual_plotext import PlotextPlot

from workbench.core.theming import register_plot_theme
from workbench.lab.chart_data import ChartData, nice_ticks, reduce_points, tick_label


def _ordered_unique(data: object) -> list:
    """Unique items in first-seen order (what plotext's `no_duplicates` means)."""
    return list(dict.fromkeys(data))  # type: ignore[call-overload]


# plotext 5.2.8 removes duplicate points with list(set(...)), so the order it draws overlapping
# bars and labels in follows string hashing, which changes with every process: the same chart
# came out differently from run to run. The order-preserving version (plotext's own commented
# alternative) makes charts, and so snapshots, the same every time.
plotext_utility.no_duplicates = _ordered_unique

DRAWN_FALLBACK_S = 0.25  # `when_drawn` callbacks of a frame no render pass took run after this
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
        self._building = threading.Lock()  # one build at a time on this chart's figure
        self._ahead = 0  # builds started off the UI loop and not yet landed
        self._after_drawn: list[Callable[[], object]] = []  # `when_drawn` callbacks waiting

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
        """True while new data waits for its (rate-capped) redraw or its frame's build."""
        return self._timer is not None or self._ahead > 0

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

    def when_drawn(self, callback: Callable[[], object]) -> None:
        """Call `callback` once the current data's frame is drawn: after the render pass that
        takes a frame built in a thread (DRAWN_FALLBACK_S after it landed, at the latest), or
        after the next refresh when no redraw waits and no build runs. For work that must not
        take the interpreter lock from the build and the frame (Tune's tail attribution after
        its preview)."""
        if self.pending:
            self._after_drawn.append(callback)
        else:
            self.call_after_refresh(callback)

    def _redraw(self) -> None:
        self._timer = None
        self._last_refresh = time.perf_counter()
        if not self._build_ahead():
            self.refresh()
            self._call_after_drawn()

    def _key(self) -> tuple:
        """What the frame on screen must have been built for."""
        return (self._version, self.size.width, self.size.height, self.app.theme,
                self.app.no_color)  # fmt: skip

    def _on_screen(self) -> bool:
        """Shown now: mounted on the active screen, and neither it nor a container hidden."""
        return (
            self.is_attached
            and self.screen.is_current
            and all(node.display for node in self.ancestors_with_self if hasattr(node, "display"))
        )

    def _build_ahead(self) -> bool:
        """Build the current data's frame in a thread, then draw it; False when there is
        nothing to build ahead (no data, too small or hidden: render decides)."""
        key = self._key()
        if self.data is None or key[1] < 10 or key[2] < 4 or not self._on_screen():
            return False
        theme = register_plot_theme(self.app)  # on the loop: it writes plotext's theme table
        self._ahead += 1
        self.run_worker(self._land(self.data, key, theme), group=f"chart-{id(self)}",
                        exit_on_error=False)  # fmt: skip
        return True

    async def _land(self, data: ChartData, key: tuple, theme: str) -> None:
        try:
            frame: Text | None = await asyncio.to_thread(self._locked_build, data, key, theme)
        except Exception:  # render builds it again on the loop, where a failure shows as ever
            frame = None
        finally:
            self._ahead -= 1
        if frame is not None and key == self._key():
            self._frame, self._frame_key = frame, key
        self.refresh()  # the frame, or render builds the one now wanted
        # `when_drawn` callbacks run once the compositor has rendered the frame (`render`):
        # after a refresh they ran before it, and took the interpreter lock from it. A chart
        # left unrendered (scrolled away) runs them after DRAWN_FALLBACK_S all the same.
        if self._after_drawn:
            self.set_timer(DRAWN_FALLBACK_S, self._call_after_drawn)

    def _call_after_drawn(self) -> None:
        if self.pending:  # newer data's redraw or build: its frame is the one waited for
            return
        waiting, self._after_drawn = self._after_drawn, []
        for callback in waiting:
            self.call_after_refresh(callback)

    def _locked_build(self, data: ChartData, key: tuple, theme: str) -> Text:
        with self._building:
            return self._build(data, key[1], key[2], theme)

    def render(self) -> RenderResult:
        key = self._key()
        if self._frame is None or key != self._frame_key:
            if not self._building.acquire(blocking=False):  # a build in a thread: it refreshes
                return self._frame if self._frame is not None else Text("")
            try:
                theme = register_plot_theme(self.app)
                self._frame = self._build(self.data, key[1], key[2], theme)
                self._frame_key = key
            finally:
                self._building.release()
        if self._after_drawn and self._frame_key == key and not self.pending:
            self.call_later(self._call_after_drawn)  # after this render pass and its frame
        return self._frame

    def _build(self, data: ChartData | None, width: int, height: int, theme: str) -> Text:
        """The frame of `data` at width x height in plotext theme `theme` (on the loop or in
        a thread: reads only its arguments and this chart's figure)."""
        if data is None or width < 10 or height < 4:
            return Text(self.placeholder, style="italic")
        title, legend = title_and_legend(data, width)
        plot_height = height - (1 if legend else 0)  # a legend row sits under the plot
        plt = self.plt
        plt.clear_figure()  # never stack series (NOTES: 4 ms -> 548 ms after 300 updates)
        plt.plotsize(width, plot_height)
        plt._set_size(width, plot_height)  # see PlotextPlot.render: resizing needs both
        plt.theme(theme)
        plt.title(title)
        if data.xlabel:
            plt.xlabel(data.xlabel)
        if data.ylabel:
            plt.ylabel(data.ylabel)
        rows = max(2, plot_height - PLOT_FRAME_ROWS)  # rows the data area has
        if data.kind == "lines":
            points = max(2, POINTS_PER_CELL * width)
            for number, series in enumerate(data.series):
                x, y = reduce_points(series.x, series.y, points, peaks=series.peaks)
                plt.plot(x.tolist(), y.tolist(), marker=LINE_MARKERS[number % len(LINE_MARKERS)])
            self._value_axis(plt.ylim, plt.yticks, data, rows, low=None)
            for level in data.hlines:
                plt.hline(level)
            if data.xticks:
                plt.xticks([x for x, _ in data.xticks], [label for _, label in data.xticks])
            else:
                self._round_x_ticks(data, width)
        elif data.kind == "bars":
            values = [s.y.tolist() for s in data.series]
            markers = [BAR_MARKERS[i % len(BAR_MARKERS)] for i in range(len(values))]
            if len(values) > 1:
                plt.multiple_bar(list(data.categories), values, marker=markers)
            else:
                plt.bar(list(data.categories), values[0], marker=markers[0])
            self._value_axis(plt.ylim, plt.yticks, data, rows, low=0.0)
        else:  # hbars: plotext draws the first category at the bottom, so reverse them
            values = [s.y[::-1].tolist() for s in data.series]
            markers = [BAR_MARKERS[i % len(BAR_MARKERS)] for i in range(len(values))]
            categories = list(data.categories[::-1])
            if len(values) > 1:
                plt.multiple_bar(categories, values, marker=markers, orientation="horizontal")
            else:
                plt.bar(categories, values[0], marker=markers[0], orientation="horizontal")
            self._value_axis(plt.xlim, plt.xticks, data, max(2, width // 6), low=0.0)
        self.builds += 1
        self.built_at = time.perf_counter()
        frame = figure_text(plt)
        if legend:
            frame.append("\n")
            frame.append(Text(legend, no_wrap=True, overflow="ellipsis"))
        return frame

    @staticmethod
    def _value_axis(limit, ticks, data: ChartData, cells: int, *, low: float | None) -> None:  # type: ignore[no-untyped-def]
        """Round ticks on the value axis, and each reference line's value as a tick of its
        own (round ticks closer than one cell to it are dropped, so no two labels share a
        row and the line sits on its own number)."""
        values = [s.y[np.isfinite(s.y)] for s in data.series]
        found = np.concatenate([*values, np.asarray(data.hlines, dtype=np.float64)])
        if found.size == 0:
            return
        lo = float(found.min()) if low is None else min(low, float(found.min()))
        lo_lim, hi_lim, round_ticks = nice_ticks(
            lo, float(found.max()), max(3, cells // TICK_EVERY)
        )
        limit(lo_lim, hi_lim)
        cell = (hi_lim - lo_lim) / cells
        kept = [t for t in round_ticks if all(abs(t - h) >= cell for h in data.hlines)]
        placed = sorted({*kept, *data.hlines})
        ticks(placed, [tick_label(v) for v in placed])

    def _round_x_ticks(self, data: ChartData, width: int) -> None:
        """Round, evenly spaced x ticks inside the data's range (about one per 12 columns)."""
        xs = [s.x[np.isfinite(s.x)] for s in data.series if len(s.x)]
        if not xs:
            return
        found = np.concatenate(xs)
        lo, hi = float(found.min()), float(found.max())
        if hi <= lo:
            return
        _, _, ticks = nice_ticks(lo, hi, max(2, width // 12))
        inside = [t for t in ticks if lo - 1e-9 <= t <= hi + 1e-9]
        self.plt.xlim(lo, hi)
        self.plt.xticks(inside, [tick_label(t) for t in inside])


def figure_text(plt) -> Text:  # type: ignore[no-untyped-def]
    """The built figure as rich Text: what `Text.from_ansi(plt.build().rstrip("\\n"))` gives
    (the same plain text and spans; tests/app/test_chart_build.py), read from plotext's cell
    matrices without the round trip through an ANSI string (plotext writing one escape per
    colour run, rich parsing them back: most of a chart's build, 120x40 in ~20 ms on a slow
    host). Each run of cells with the same colours becomes one span, styled as rich decodes
    that run's escape codes (`_run_style`)."""
    plt._set_sizes()  # plotext's Figure.build, less its canvas string (set_canvas)
    plt._build_matrix()
    matrix = plt.monitor.matrix
    cols = matrix.cols
    joiner = Text("\n", end="\n", tab_size=8)
    lines = []
    for row in matrix.Rows[::-1]:  # plotext's row 0 is the bottom row
        markers, fore, style, back = (
            matrix.marker[row], matrix.fullground[row], matrix.style[row], matrix.background[row],
        )  # fmt: skip
        line = Text()
        start = 0
        # One pass over the row's cells (a Python loop: the matrices are lists of colour
        # codes of mixed types), closing a run where any of the three colours changes.
        for col in range(1, cols + 1):
            if (
                col < cols
                and fore[col] == fore[start]
                and style[col] == style[start]
                and (back[col] == back[start])
            ):
                continue
            line.append(
                "".join(markers[start:col]), _run_style(fore[start], style[start], back[start])
            )
            start = col
        lines.append(line)
    return joiner.join(lines)


def _run_style(fore, style, back) -> Style | None:  # type: ignore[no-untyped-def]
    """The rich style of a run of cells in plotext colours (fore, style, back): rich's decoding
    of the escape codes plotext writes for them; None for none."""
    key = tuple(tuple(c) if isinstance(c, list) else c for c in (fore, style, back))
    found = _RUN_STYLES.get(key, _MISSING)
    if found is _MISSING:
        decoded = AnsiDecoder().decode_line(
            plotext_utility.colors_to_ansi(fore, style, back) + "x" + plotext_utility.ansi_end
        )
        found = decoded.spans[0].style if decoded.spans else None
        _RUN_STYLES[key] = found
    return found  # type: ignore[return-value]


_MISSING = object()
_RUN_STYLES: dict[tuple, Style | str | None] = {}
"""Rich styles of plotext colour triples, as decoded once (a handful per theme)."""

TICK_EVERY = 3  # about one labelled tick per three rows (at least three intervals)
PLOT_FRAME_ROWS = 4  # rows of a plot that are not data: title, two frame lines, x tick labels
# Each series gets its own glyph, so series stay apart without colour (NO_COLOR, 16 colours):
LINE_MARKERS = ("braille", "•", "+", "x")
BAR_MARKERS = ("█", "▒", "░", "▚")
LEGEND_LINE_GLYPHS = ("⠤", "•", "+", "x")  # what each line marker looks like in the legend


def title_and_legend(data: ChartData, width: int) -> tuple[str, str]:
    """The title row and the legend row ('' when the legend fits in the title row): the
    legend never sits over the data. In the title row the reference lines may be named
    once ('─ SLA'): their values are the ticks they are drawn on."""
    room = width - 2
    for legend in (legend_text(data), legend_text(data, short=True)):
        combined = f"{data.title} · {legend}" if data.title else legend
        if len(combined) <= room:
            return combined, ""
    return data.title, legend_text(data)


def legend_text(data: ChartData, *, short: bool = False) -> str:
    """The legend row under the plot: each series' glyph and label, then the reference
    lines with their values ('─ p99 SLA 76')."""
    glyphs = LEGEND_LINE_GLYPHS if data.kind == "lines" else BAR_MARKERS
    parts = [f"{glyphs[i % len(glyphs)]} {s.label}" for i, s in enumerate(data.series)]
    if short and data.hline_name:
        return "  ".join([*parts, f"─ {data.hline_name}"])
    for number, level in enumerate(data.hlines):
        label = data.hline_labels[number] if number < len(data.hline_labels) else ""
        parts.append(f"─ {label or tick_label(level)}")
    return "  ".join(parts)
