"""Tune's views on a serving packet show the serving run (TTFT, TPOT, latency distributions,
engine load and queue, HBM), every one redrawn from the new run after an edit, and the decode
step's dynamic-batcher run waits until the serving views are drawn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from textual import events
from textual.widgets import Static
from textual.worker import WorkerState

from model.runtime.serving_profiles import serving_profiles
from model.runtime.serving_rules import kv_bytes_per_token, weight_bytes_total
from triage.runs import run_serving_scenario
from triage.scenario import build_scenario
from workbench.app import WorkbenchApp
from workbench.lab.charts import GIB, nines
from workbench.lab.engine import LATENCY_PERCENTILES, ServingRun, subject
from workbench.screens.tune import TuneScreen

from .conftest import SMALL, settle
from .test_lab_app import chart, tab_to
from .test_snapshots import compare

MakeApp = Callable[..., WorkbenchApp]
SERVING_VIEWS = ("tune-kv", "tune-ttft", "tune-tpot", "tune-latency", "tune-load", "tune-hbm")
CHART_OF = {view: view for view in SERVING_VIEWS} | {"tune-load": "load-chart"}


async def open_tune(app: WorkbenchApp, pilot) -> TuneScreen:  # type: ignore[no-untyped-def]
    await pilot.pause()
    await pilot.press(str([s.id for s in app.steps].index("tune") + 1))
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, TuneScreen)
    return screen


def assert_charts_show(app: WorkbenchApp, run: ServingRun, base: ServingRun) -> None:
    """Every serving view's chart holds the series of `run` (working) and `base`."""
    packet = app.working.packet
    sla = packet.inputs.sla
    x = nines(LATENCY_PERCENTILES)
    for chart_id, field, targets in (
        ("tune-ttft", "ttft_ms", (sla.ttft_p95_ms,)),
        ("tune-tpot", "tpot_ms", (sla.tpot_p95_ms,)),
        ("tune-latency", "latency_ms", (sla.p95_ms, sla.p99_ms)),
    ):
        data = chart(app, chart_id).data
        assert data is not None
        assert data.values("working").tolist() == getattr(run.profiles, field).tolist()
        assert data.values("baseline").tolist() == getattr(base.profiles, field).tolist()
        assert data.series[1].x.tolist() == x.tolist()
        assert data.hlines == targets
    queue = chart(app, "load-chart").data
    assert queue is not None and queue.values("working") is run.profiles.queue_peak
    hbm = chart(app, "tune-hbm").data
    assert hbm is not None
    expected = (run.weight_bytes + run.profiles.kv_peak_tokens * run.kv_bytes_per_token) / GIB
    assert hbm.values("working").tolist() == expected.tolist()
    assert hbm.hlines == (run.weight_bytes / GIB, run.hbm_gib)
    kv = chart(app, "tune-kv").data
    assert kv is not None and kv.values("working") is not None
    tokens = f"{run.profiles.engine_tokens_per_s[0]:,.0f} tokens/s"
    assert tokens in str(app.screen.query_one("#serving-engines", Static).content)


async def test_a_tune_edit_redraws_every_serving_view_from_the_new_run(
    make_app: MakeApp, serving_file: Path
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_tune(app, pilot)
        assert screen.deck.ids[: len(SERVING_VIEWS)] == list(SERVING_VIEWS)
        first, base = screen.shown_serving
        assert_charts_show(app, first, base)
        before = {view: chart(app, CHART_OF[view]).data for view in SERVING_VIEWS}

        # The serving run lands first; only then does the decode step's run start.
        events: list[str] = []
        show, decode = screen.show_serving, screen.request_decode_step

        def noting(result: tuple[ServingRun, ServingRun]) -> None:
            target = screen.working_subject(app.working)
            events.append("serving" if app.lab.cached_run(target) is None else "serving late")
            show(result)

        def decode_noted(**kwargs: bool) -> None:
            events.append("decode step")
            decode(**kwargs)

        screen.show_serving = noting  # type: ignore[method-assign]
        screen.request_decode_step = decode_noted  # type: ignore[method-assign]
        await tab_to(app, pilot, "tune-batch_policy-max_num_seqs")
        await pilot.press("down")  # 64 -> 63: a new iteration table and serving run
        await settle(app, pilot)
        assert screen.config.batch_policy.max_num_seqs == 63
        assert events == ["serving", "decode step"]
        target = screen.working_subject(app.working)
        assert app.lab.cached_run(target) is not None  # ... and ran after it
        assert screen.shown_runs is not None and screen.shown_runs[0].name == "working"

        run, base_again = screen.shown_serving
        assert base_again is base and run is app.lab.cached_serving_run(target)
        assert run.summary != first.summary
        # The run is what a fresh scenario of the configuration gives (workbench run's), and
        # its profiles are the fresh result's.
        loaded = subject(app.working).loaded
        scenario = build_scenario(loaded, config=screen.config)
        fresh = run_serving_scenario(scenario, loaded.name)
        unnamed = ("candidate", "command")
        assert {k: v for k, v in fresh.summary.items() if k not in unnamed} == {
            k: v for k, v in run.summary.items() if k not in unnamed
        }
        profiles = serving_profiles(fresh.result, LATENCY_PERCENTILES)
        for field in ("ttft_ms", "tpot_ms", "latency_ms", "queue_peak", "kv_peak_tokens"):
            assert np.array_equal(getattr(run.profiles, field), getattr(profiles, field)), field
        assert run.kv_bytes_per_token == kv_bytes_per_token(scenario.block)
        assert run.weight_bytes == weight_bytes_total(scenario.block)
        assert_charts_show(app, run, base)

        # Each view, once on screen, is drawn from the new run's data.
        for view in SERVING_VIEWS:
            screen.deck.show_view(view)
            await settle(app, pilot)
            widget = chart(app, CHART_OF[view])
            assert widget.data is not before[view], view
            assert widget.drawn and widget.builds >= 1, view


async def test_serving_views_replace_the_decode_step_charts(
    make_app: MakeApp, serving_file: Path
) -> None:
    """The latency and HBM views show the serving run, not the decode step's run (whose
    charts are the dynamic batcher's latency percentiles and HBM demand)."""
    app = make_app(serving_file)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_tune(app, pilot)
        assert screen.shown_runs is not None  # the decode step ran ...
        latency = chart(app, "tune-latency").data
        assert latency is not None and latency.title.startswith("Latency, ms")
        decode = screen.shown_runs[0].latency_ms
        assert latency.values("working").tolist() != decode.tolist()  # ... but is not charted
        assert "HBM GiB" in chart(app, "tune-hbm").data.title
        assert not screen.query("#load-progress")  # no p99-vs-load sweep for serving


@pytest.mark.parametrize("view", SERVING_VIEWS)
async def test_serving_views_match_their_snapshots(
    make_app: MakeApp, serving_file: Path, monkeypatch: pytest.MonkeyPatch, view: str
) -> None:
    """Each serving view at 80x24 under NO_COLOR: series told apart by glyph."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(serving_file)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_tune(app, pilot)
        screen.deck.show_view(view)
        await settle(app, pilot)
        name = f"tune-serving-{view.removeprefix('tune-')}-no-color-80x24"
        failure = compare(name, app.export_screenshot(title=name), SMALL)
    assert not failure, failure


async def test_a_burst_of_edits_runs_its_first_key_at_once_and_then_only_its_last(
    make_app: MakeApp, serving_file: Path
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_tune(app, pilot)
        await tab_to(app, pilot, "tune-batch_policy-max_num_seqs")
        # A burst: keys closer than the debounce (made long here, so a loaded machine's slow
        # key handling cannot split it), sent as a terminal sends held keys (Pilot's press
        # waits between keys): the first, then two more while its run is in flight.
        screen.DEBOUNCE_S = 1.0  # type: ignore[misc]
        # The model loaded first: a run started before it waits for the warm-up (still a
        # running worker), and the next key cancelled that wait before the run began (seen
        # once in a full suite run: no run for 63 at all).
        assert await asyncio.to_thread(app.model_loaded.wait, 60.0), "the model never loaded"
        app._driver.send_message(events.Key("down", None))  # 64 -> 63
        while not any(
            w.group == "compute-tune-tune-serving" and w.state == WorkerState.RUNNING
            for w in app.workers
        ):
            await asyncio.sleep(0.001)
        for _ in range(2):  # 63 -> 62 -> 61
            app._driver.send_message(events.Key("down", None))
        await settle(app, pilot)
        assert screen.config.batch_policy.max_num_seqs == 61
        lab, working = app.lab, app.working

        def served(seqs: int) -> ServingRun | None:
            policy = screen.config.batch_policy.model_copy(update={"max_num_seqs": seqs})
            config = screen.config.model_copy(update={"batch_policy": policy})
            return lab.cached_serving_run(subject(working, config, name="working"))

        assert served(63) is not None  # the first key ran at once ...
        assert served(62) is None  # ... the keys during its run were coalesced ...
        last = served(61)
        assert last is not None and screen.shown_serving[0] is last  # ... into the last one
