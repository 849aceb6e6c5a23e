"""Baseline, Diagnose and Tune driven by keys through Pilot: model results and chart data."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual import events
from textual.geometry import Region
from textual.widgets import ProgressBar, Static

from packets.candidates import apply_candidate
from packets.schema import GemmTile
from workbench.app import DRAFT_DELAY_S, WorkbenchApp
from workbench.core import drafts
from workbench.lab.charts import driver_chart
from workbench.lab.engine import LOAD_FACTORS, Lab, LabPreview, LabRun, Subject, subject
from workbench.screens.tune import TuneScreen
from workbench.widgets.chart_deck import ChartDeck
from workbench.widgets.charts import Chart
from workbench.widgets.field_editor import FieldEditor

from .conftest import LARGE, SMALL, settle

MakeApp = Callable[..., WorkbenchApp]
KEY_REPEAT_S = 0.01  # a burst: faster than the debounce even on a busy machine


def text_of(app: WorkbenchApp, selector: str) -> str:
    """The text a widget shows now (as drawn at its size)."""
    widget = app.screen.query_one(selector, Static)
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(line.text for line in lines)


def chart(app: WorkbenchApp, chart_id: str) -> Chart:
    return app.screen.query_one(f"#{chart_id}", Chart)


async def tab_to(app: WorkbenchApp, pilot, editor_id: str) -> FieldEditor:  # type: ignore[no-untyped-def]
    """Press Tab until the editor `editor_id` has focus (keys only, as a user would)."""
    for _ in range(40):
        focused = app.focused
        if focused is not None and any(a.id == editor_id for a in focused.ancestors_with_self):
            return app.screen.query_one(f"#{editor_id}", FieldEditor)
        await pilot.press("tab")
    raise AssertionError(f"Tab never reached {editor_id}")


async def retype(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("end", "ctrl+u", *text)


def working_run(app: WorkbenchApp) -> LabRun:
    screen = app.screen
    assert isinstance(screen, TuneScreen) and screen.shown_runs is not None
    return screen.shown_runs[0]


def expected_run(app: WorkbenchApp) -> LabRun:
    """The lab's run of the Tune screen's working configuration (computed if need be)."""
    screen = app.screen
    assert isinstance(screen, TuneScreen)
    return app.lab.run(screen.working_subject(app.working))


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
async def test_baseline_diagnose_and_tune_by_keys(make_app: MakeApp, size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.press("ctrl+n")
        await settle(app, pilot)
        base = app.lab.run(subject(app.working))
        p99 = base.summary["latency_ms"]["p99"]
        assert f"p99 {p99:,.2f} ms" in text_of(app, "#baseline-tail")
        assert f"--seed {app.working.packet.seed}" in text_of(app, "#baseline-run")
        layers = app.working.packet.inputs.workload.block.layers
        assert f"kernels x {layers} layers" in text_of(app, "#stage-1")
        assert [r.done for r in app.step_rows()][1:3] == [True, True]

        await pilot.press("ctrl+n")
        await settle(app, pilot)
        primary = base.summary["classification"]["primary"]["class"]
        assert primary in text_of(app, "#diagnose-class")
        assert "Inspect the tail first" in text_of(app, "#diagnose-checklist")
        drivers = chart(app, "chart-drivers")
        expected = driver_chart(base)
        assert drivers.data is not None and drivers.builds >= 1
        assert drivers.data.categories == expected.categories
        assert drivers.data.values("slowest 1%").tolist() == (
            expected.values("slowest 1%").tolist()
        )
        await pilot.press("f2")  # next chart: the queue-wait profile
        await settle(app, pilot)
        assert app.screen.query_one(ChartDeck).current == "chart-wait"
        wait = chart(app, "chart-wait")
        assert wait.data is not None and wait.builds >= 1
        assert wait.data.values("requests").sum() == base.summary["measured_requests"]

        await pilot.press("ctrl+n")
        await settle(app, pilot)
        assert app.current_step == "tune"
        latency = chart(app, "tune-latency")
        before = latency.data
        assert before is not None

        # A tile shape, by keys: the model reruns and the chart shows the new run.
        down = await tab_to(app, pilot, "tune-tile-down_proj")
        await retype(pilot, "128x256x64")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        assert screen.config.tiles["down_proj"] == GemmTile(m=128, n=256, k=64)
        assert down.problem == ""
        run = working_run(app)
        assert run.summary == expected_run(app).summary
        assert run.summary["latency_ms"]["p99"] != p99  # the pinned tile changed the run
        after = latency.data
        assert after is not before and after is not None
        assert after.values("working").tolist() == run.latency_ms.tolist()
        assert after.values("baseline").tolist() == base.latency_ms.tolist()
        change = run.summary["latency_ms"]["p99"] - base.summary["latency_ms"]["p99"]
        assert f"({change:+,.2f})" in text_of(app, "#tune-status")  # p99 change vs baseline

        # The batch policy, by keys: two arrow steps on max_batch.
        await tab_to(app, pilot, "tune-batch_policy-max_batch")
        await pilot.press("up", "up")
        await settle(app, pilot)
        assert screen.config.batch_policy.max_batch == 10
        batch_run = working_run(app)
        assert batch_run.summary == expected_run(app).summary
        assert batch_run.profiles.batch_sizes.tolist() == list(range(1, 11))
        assert latency.data is not after
        assert latency.data.values("working").tolist() == batch_run.latency_ms.tolist()
        hbm = chart(app, "tune-hbm").data
        assert hbm is not None
        assert hbm.values("working").tolist() == batch_run.profiles.hbm_demand_ratio.tolist()


class GatedLab(Lab):
    """A lab whose runs (and previews) of working configurations wait until the test releases
    them, or fail while `failing` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.started: dict[int, threading.Event] = {}
        self.release: dict[int, threading.Event] = {}
        self.finished: dict[int, threading.Event] = {}
        self.failing = False
        self.previewed: list[int] = []
        """max_batch of every working configuration previewed (simulated), in order."""

    def gate(self, max_batch: int) -> None:
        self.started[max_batch] = threading.Event()
        self.release[max_batch] = threading.Event()
        self.finished[max_batch] = threading.Event()

    def _wait(self, wanted: Subject) -> int | None:
        if wanted.name != "working":
            return None
        if self.failing:
            raise ValueError("tiles.down_proj: the model broke\nsecond line never shown")
        batch = wanted.config.batch_policy.max_batch
        if batch in self.release:
            self.started[batch].set()
            assert self.release[batch].wait(30), "the test never released this run"
        return batch

    def run(self, wanted: Subject) -> LabRun:
        batch = self._wait(wanted)
        found = super().run(wanted)
        if batch in self.finished:
            self.finished[batch].set()
        return found

    def preview(self, wanted: Subject) -> LabRun | LabPreview:
        if wanted.name == "working":
            self.previewed.append(wanted.config.batch_policy.max_batch)
        batch = self._wait(wanted)
        found = super().preview(wanted)
        if batch in self.finished:
            self.finished[batch].set()
        return found


async def test_a_tune_key_after_a_pause_runs_at_once_and_one_right_after_it_waits(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(TuneScreen, "DEBOUNCE_S", 1.0)  # keys 1 s apart or closer: one burst
    app = make_app()
    lab = GatedLab()
    app.lab = lab
    async with app.run_test(size=LARGE) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        await tab_to(app, pilot, "tune-batch_policy-max_batch")
        await asyncio.sleep(1.1)  # a pause: the next key starts a burst
        await pilot.press("up", "up")  # 9 runs at once; 10, right after it, waits for more keys
        await wait_for(pilot, lambda: bool(lab.previewed), "a run")
        assert lab.previewed[0] == 9  # debounced alone, the first run would have been 10's
        await settle(app, pilot)
        assert lab.previewed == [9, 10]
        assert working_run(app).profiles.batch_sizes[-1] == 10


async def wait_for(pilot, condition: Callable[[], bool], what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)


async def test_tuning_session_bursts_staleness_refusals_and_saving(
    make_app: MakeApp, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    lab = GatedLab()
    app.lab = lab
    async with app.run_test(size=LARGE) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        await tab_to(app, pilot, "tune-batch_policy-max_batch")

        # A burst of arrow keys (a held key, or keys typed quickly): its first key (9) runs at
        # once, the rest run once, for the last value; nothing in between is ever simulated.
        runs = lab.model_runs
        lab.previewed.clear()
        debounce = TuneScreen.DEBOUNCE_S
        monkeypatch.setattr(TuneScreen, "DEBOUNCE_S", 0.5)  # one burst even on a busy machine
        for _ in range(6):
            app._driver.send_message(events.Key("up", None))  # type: ignore[union-attr]
            await asyncio.sleep(KEY_REPEAT_S)
        await wait_for(pilot, lambda: working_run(app).profiles.batch_sizes[-1] == 14, "14")
        await settle(app, pilot)
        monkeypatch.setattr(TuneScreen, "DEBOUNCE_S", debounce)
        assert screen.config.batch_policy.max_batch == 14
        assert set(lab.previewed) <= {9, 14} and lab.previewed[-1] == 14
        assert lab.model_runs - runs <= 2
        assert working_run(app).profiles.batch_sizes[-1] == 14

        # A stale result never overwrites a newer one: 15 starts first, finishes last.
        lab.gate(15)
        lab.gate(16)
        await pilot.press("up")
        await wait_for(pilot, lab.started[15].is_set, "the run for max_batch 15")
        await pilot.press("up")
        await wait_for(pilot, lab.started[16].is_set, "the run for max_batch 16")
        lab.release[16].set()
        await wait_for(pilot, lambda: working_run(app).profiles.batch_sizes[-1] == 16, "16")
        lab.release[15].set()
        await wait_for(pilot, lab.finished[15].is_set, "the run for 15 to end")
        await settle(app, pilot)
        assert working_run(app).profiles.batch_sizes[-1] == 16
        shown = chart(app, "tune-latency").data
        assert shown is not None
        assert shown.values("working").tolist() == expected_run(app).latency_ms.tolist()

        # An invalid tile is refused in place with the model's message; nothing reruns.
        runs = lab.model_runs
        config = screen.config
        tile = await tab_to(app, pilot, "tune-tile-qkv_proj")
        await retype(pilot, "100x128x64")
        await settle(app, pilot)
        assert "tile granule 32" in tile.problem
        under = [tile.render_line(y).text.strip() for y in range(1, tile.size.height)]
        assert "tile granule 32" in " ".join(under)  # drawn under the field, wrapped to it
        assert screen.config is config and lab.model_runs == runs
        await pilot.press("escape")  # leaves the field, the accepted value back
        assert tile.text == "" and tile.problem == ""

        # A failing run says so in one line; the app carries on.
        lab.failing = True
        await tab_to(app, pilot, "tune-batch_policy-max_batch")
        await pilot.press("down")
        await settle(app, pilot)
        error = text_of(app, "#lab-error")
        assert "the model broke" in error and "second line" not in error
        assert app.is_running
        lab.failing = False

        # f4 saves the working configuration as a candidate, into the packet and its draft.
        await pilot.press("f4")
        await settle(app, pilot)
        saved = app.working.packet.candidates[-1]
        assert saved.name == "lab-1"
        assert apply_candidate(app.working.packet.baseline, saved) == screen.config
        assert screen.start_from == "lab-1" and app.step_rows()[3].done
        await pilot.pause(DRAFT_DELAY_S + 0.1)
        assert app.wait_for_drafts(10)
        draft = drafts.read_draft(app.working.source, app.drafts_folder)  # type: ignore[arg-type]
        assert isinstance(draft, drafts.Draft)
        assert draft.working.packet.candidates[-1].name == "lab-1"

        # The p99-vs-load view runs its sweep when shown, with progress.
        await pilot.press("f2")
        await settle(app, pilot)
        bar = screen.query_one("#load-progress", ProgressBar)
        assert bar.total == 2 * len(LOAD_FACTORS) and bar.progress == bar.total
        load = chart(app, "load-chart").data
        assert load is not None
        curve = lab.load_curve(screen.working_subject(app.working))
        assert load.values("working").tolist() == curve.p99_ms.tolist()
        assert len(load.values("baseline")) == len(LOAD_FACTORS)

        # The candidates view lists every candidate with its change against the baseline.
        await pilot.press("f3", "f3")  # back to Latency, then around to Candidates
        await settle(app, pilot)
        assert screen.deck.current == "tune-candidates"
        table = text_of(app, "#candidates-table")
        base_p99 = lab.run(subject(app.working)).summary["latency_ms"]["p99"]
        lab1 = lab.run(subject(app.working, name="lab-1")).summary["latency_ms"]["p99"]
        assert "lab-1" in table and f"({lab1 - base_p99:+,.1f})" in table
        assert "standard-fusion-wide-tiles" in table


async def test_lab_keys_are_listed_in_help_and_palette(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        ids = {row.binding_id for row in app.help_rows()}
        assert {"next-chart", "previous-chart", "save-candidate", "reset-working"} <= ids
        titles = {c.title for c in app.palette_commands(app.screen)}
        assert {"Save candidate", "Next view", "Reset working"} <= titles
        shown = [b.binding.description for b in app.screen.active_bindings.values()]
        assert "Save candidate" in shown


@pytest.mark.parametrize("no_color", [False, True], ids=["ansi-theme", "NO_COLOR"])
async def test_charts_follow_16_colour_themes_and_no_color(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch, no_color: bool
) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(theme="workbench-ansi")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("3")
        await settle(app, pilot)
        drivers = chart(app, "chart-drivers")
        assert drivers.builds >= 1
        frame = drivers.render()
        colours = {
            (span.style.color, span.style.bgcolor)  # type: ignore[union-attr]
            for span in frame.spans  # type: ignore[union-attr]
            if not isinstance(span.style, str)
        }
        if no_color:
            assert colours <= {(None, None)}
        else:  # the theme's own 16 colours (ANSI numbers), never an RGB value
            assert all(c is None or c.number is not None for pair in colours for c in pair)
            assert any(c is not None for pair in colours for c in pair)


async def test_a_delay_edit_reuses_the_service_tables_and_draws_each_chart_once(
    make_app: MakeApp,
) -> None:
    from workbench.lab.engine import TABLES

    app = make_app()
    async with app.run_test(size=LARGE) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        shown: dict[str, list] = {"tune-latency": [], "tune-hbm": []}
        for chart_id, calls in shown.items():
            widget = chart(app, chart_id)
            through = widget.show

            def counted(data, placeholder=None, calls=calls, through=through):  # type: ignore[no-untyped-def]
                calls.append(data)
                through(data, placeholder)

            widget.show = counted  # type: ignore[method-assign]
        await tab_to(app, pilot, "tune-batch_policy-max_queue_delay_ms")
        builds, runs = TABLES.builds, app.lab.model_runs
        delay = screen.config.batch_policy.max_queue_delay_ms
        await pilot.press("up")
        await settle(app, pilot)
        assert screen.config.batch_policy.max_queue_delay_ms > delay
        assert app.lab.model_runs == runs + 1  # the edit ran the model (preview, then run)
        assert TABLES.builds == builds  # ... on the plan's memoized service tables
        assert working_run(app) == expected_run(app)
        for chart_id, calls in shown.items():
            assert len(calls) == 1, chart_id  # the preview drew it; the run did not redraw
            assert chart(app, chart_id).data is calls[0]
