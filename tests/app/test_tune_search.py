"""The Tune step's search: f6 runs it, the Pareto view charts the front, f7 takes a point as the
working configuration and f4 saves it as a candidate (Pilot, real model runs)."""

from __future__ import annotations

from collections.abc import Callable

from packets.candidates import apply_candidate
from triage.search import run_search
from workbench.app import WorkbenchApp
from workbench.lab.engine import subject
from workbench.screens.tune import SEARCH_TRIALS, TuneScreen
from workbench.widgets.charts import Chart

from .conftest import SMALL, settle

MakeApp = Callable[..., WorkbenchApp]


async def test_search_charts_the_front_and_a_point_is_saved_as_a_candidate(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        await pilot.press("f6")
        await settle(app, pilot)
        assert screen.deck.current == "tune-pareto"
        expected = run_search(
            subject(app.working).loaded, SEARCH_TRIALS, app.working.packet.seed, "p99"
        )
        assert [t.number for t in screen.pareto] == [t.number for t in expected.pareto]
        data = screen.query_one("#pareto-chart", Chart).data
        assert data is not None
        front = sorted(expected.pareto, key=lambda t: t.row["throughput_per_s"])
        assert data.values("Pareto front").tolist() == [t.row["latency_p99_ms"] for t in front]

        await pilot.press("f7")
        await settle(app, pilot)
        assert screen.config == expected.pareto[0].config
        await pilot.press("f4")
        await settle(app, pilot)
        saved = app.working.packet.candidates[-1]
        assert saved.name == "lab-1"
        assert apply_candidate(app.working.packet.baseline, saved) == expected.pareto[0].config


async def test_f7_without_a_search_changes_nothing(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        before = screen.config
        await pilot.press("f7")
        await settle(app, pilot)
        assert screen.config == before and screen.pareto == ()
