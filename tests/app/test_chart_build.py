"""A chart on screen builds new data's frame off the UI loop, and draws the frame a build on
the loop would have drawn; hidden charts are never built."""

from __future__ import annotations

import threading

import numpy as np
from rich.text import Text
from textual.app import App, ComposeResult

from workbench.core.theming import register_plot_theme
from workbench.lab.chart_data import ChartData, Series
from workbench.widgets.charts import Chart

from .conftest import settle


def data(scale: float) -> ChartData:
    x = np.arange(50, dtype=np.float64)
    return ChartData(
        kind="lines",
        title="latency (ms)",
        series=(Series("working", x, scale * np.sqrt(x + 1.0)),),
        hlines=(scale * 4.0,),
        hline_labels=("p99 SLA",),
    )


class Charts(App):
    def compose(self) -> ComposeResult:
        yield Chart(id="shown")
        hidden = Chart(id="hidden")
        hidden.display = False
        yield hidden


async def test_new_data_is_built_in_a_thread_and_drawn_as_a_build_on_the_loop_would() -> None:
    app = Charts()
    async with app.run_test(size=(80, 24)) as pilot:
        shown, hidden = app.query_one("#shown", Chart), app.query_one("#hidden", Chart)
        threads: list[str] = []
        through = shown._build

        def recorded(*args):  # type: ignore[no-untyped-def]
            threads.append(threading.current_thread().name)
            return through(*args)

        shown._build = recorded  # type: ignore[method-assign]
        for scale in (1.0, 2.0):
            shown.show(data(scale))
            hidden.show(data(scale))
            await pilot.pause(0.06)  # past the chart's rate cap: each show builds
            await settle(app, pilot)
            assert shown.drawn and shown.data is not None
            key = shown._key()
            on_loop = Chart._build(shown, shown.data, key[1], key[2], register_plot_theme(app))
            assert shown._frame is not None and shown._frame.plain == on_loop.plain
            assert shown._frame.spans == on_loop.spans
        assert threads and threading.main_thread().name not in threads
        assert hidden.builds == 0  # hidden: never built


async def test_when_drawn_waits_for_the_frame_built_off_the_loop() -> None:
    app = Charts()
    async with app.run_test(size=(80, 24)) as pilot:
        shown, hidden = app.query_one("#shown", Chart), app.query_one("#hidden", Chart)
        seen: list[tuple[str, bool]] = []
        await pilot.pause(0.06)
        shown.show(data(3.0))
        assert shown.pending  # its frame is being built in a thread
        shown.when_drawn(lambda: seen.append(("shown", shown.drawn)))
        hidden.show(data(3.0))
        hidden.when_drawn(lambda: seen.append(("hidden", hidden.pending)))
        await settle(app, pilot)
        await pilot.pause()
        assert sorted(seen) == [("hidden", False), ("shown", True)]


def bars(kind: str) -> ChartData:
    y = np.array([3.0, 1.5, 4.25, 0.5])
    return ChartData(
        kind=kind,  # type: ignore[arg-type]
        title="by core",
        series=(Series("baseline", np.array([]), y), Series("working", np.array([]), y * 1.3)),
        categories=("c0", "c1", "c2", "c3"),
    )


async def test_frames_read_from_plotexts_cells_are_its_ansi_decoded() -> None:
    """`figure_text` gives what decoding plotext's ANSI canvas gives: the same characters
    and styled spans, for lines, bars and horizontal bars, in colour and without."""
    for no_color in (False, True):
        app = Charts()
        async with app.run_test(size=(100, 30)) as pilot:
            app.no_color = no_color
            await pilot.pause()
            chart = app.query_one("#shown", Chart)
            width, height = chart.size
            for shown in (data(1.0), data(250.0), bars("bars"), bars("hbars")):
                frame = Chart._build(chart, shown, width, height, register_plot_theme(app))
                decoded = Text.from_ansi(chart.plt.build().rstrip("\n"))  # the same figure
                assert len(decoded.plain) > width * 4
                head = frame[: len(decoded)]  # a legend row may follow the plot
                assert head.plain == decoded.plain
                assert head.spans == decoded.spans
                assert any(span.style for span in decoded.spans) or no_color
