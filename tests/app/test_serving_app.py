"""A serving packet (continuous batching) in the app: Baseline shows its serving run and KV
chart, Tune edits of the continuous batch policy re-run the serving model."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from triage.runs import run_serving_scenario
from triage.scenario import build_scenario
from workbench.app import WorkbenchApp
from workbench.lab.engine import subject
from workbench.lab.views import ms
from workbench.screens.tune import TuneScreen

from .conftest import LARGE, SETTLE_TIMEOUT_S, SMALL, settle, step_key
from .test_lab_app import chart, tab_to, text_of

MakeApp = Callable[..., WorkbenchApp]


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
async def test_baseline_shows_the_serving_run_and_kv_chart(
    make_app: MakeApp, serving_file: Path, size: tuple[int, int]
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=size) as pilot:
        await pilot.press(step_key(app, "baseline"))
        await settle(app, pilot)
        run = app.lab.cached_serving_run(subject(app.working))
        assert run is not None, "the Baseline step ran the continuous scheduler"
        s = run.summary
        assert s["scheduler"] == "continuous"
        tail = text_of(app, "#baseline-tail")
        for label, key in (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms"), ("latency", "latency_ms")):
            line = next(line for line in tail.splitlines() if line.startswith(label))
            for p in ("p99", "p95", "p50"):  # tail first: p99, then p95, then p50
                assert f"{p} {ms(s[key][p])}" in line
            assert line.index("p99") < line.index("p95") < line.index("p50")
        assert f"{s['tokens_per_s']:,.0f} tokens/s" in tail
        assert f"{s['preemptions']:,} preemptions" in tail
        sla, targets = s["sla"], app.working.packet.inputs.sla
        for label, key, target in (
            ("p99", "p99_ok", targets.p99_ms),
            ("p95", "p95_ok", targets.p95_ms),
            ("TTFT p95", "ttft_p95_ok", targets.ttft_p95_ms),
            ("TPOT p95", "tpot_p95_ok", targets.tpot_p95_ms),
        ):
            assert sla[key] is not None  # the example sets every target
            assert f"{'✓' if sla[key] else '✗'} {label} <= {target:g} ms" in tail
        # The pipeline of the dynamic batcher is not shown for a serving packet.
        assert not app.screen.query_one("#pipeline").display
        kv = chart(app, "baseline-kv")
        assert kv.display and kv.data is not None and kv.drawn
        (series,) = kv.data.series
        assert series.y.tolist() == pytest.approx(
            [100.0 * o for o in s["kv_cache"]["timeline"]["occupancy"]]
        )
        assert kv.data.hlines == (100.0,)
        capacity = s["kv_cache"]["capacity_tokens_per_engine"]
        assert kv.data.hline_labels == (f"KV capacity {capacity:,} tokens/engine",)


async def test_a_dynamic_packet_keeps_its_pipeline_and_no_kv_chart(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press(step_key(app, "baseline"))
        await settle(app, pilot)
        assert app.lab.cached_serving_run(subject(app.working)) is None
        assert app.screen.query_one("#pipeline").display
        assert not chart(app, "baseline-kv").display


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
async def test_a_tune_edit_of_chunked_prefill_reruns_the_serving_model(
    make_app: MakeApp, serving_file: Path, size: tuple[int, int]
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=size) as pilot:
        await pilot.press(step_key(app, "tune"))
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, TuneScreen)
        for knob in (
            "max_num_seqs",
            "max_num_batched_tokens",
            "chunked_prefill",
            "kv_cache_tokens",
        ):
            screen.query_one(f"#tune-batch_policy-{knob}")  # the continuous policy's editors
        assert not screen.query("#tune-batch_policy-max_queue_delay_ms")
        assert screen.shown_serving is not None
        before, base = screen.shown_serving
        assert before.summary == base.summary  # unedited: the working run is the baseline's
        assert base.summary == app.lab.serving_run(subject(app.working)).summary
        tpot = base.summary["tpot_ms"]["p99"]
        assert f"TPOT p99 {ms(tpot)} (+0.00)" in text_of(app, "#tune-serving")

        # chunked_prefill false -> true by keys; the serving model re-runs off the UI thread.
        await tab_to(app, pilot, "tune-batch_policy-chunked_prefill")
        for _ in range(3):
            if screen.config.batch_policy.chunked_prefill:
                break
            await pilot.press("down")
            await settle(app, pilot)
        assert screen.config.batch_policy.chunked_prefill is True
        run, base_again = screen.shown_serving
        assert base_again is base
        assert run.summary == app.lab.serving_run(screen.working_subject(app.working)).summary
        # The plan's tables were reused (chunking changes neither), and the run is the one a
        # fresh scenario of the same configuration gives (workbench run's).
        table = screen.working_subject(app.working).scenario.iteration_table
        assert table is not None and table is subject(app.working).scenario.iteration_table
        loaded = subject(app.working).loaded
        fresh = run_serving_scenario(build_scenario(loaded, config=screen.config), loaded.name)
        unnamed = ("candidate", "command")  # the lab names it 'working'
        assert {k: v for k, v in fresh.summary.items() if k not in unnamed} == {
            k: v for k, v in run.summary.items() if k not in unnamed
        }
        now = run.summary["tpot_ms"]["p99"]
        assert now != tpot  # chunked prefill changed TPOT
        assert f"TPOT p99 {ms(now)} ({now - tpot:+,.2f})" in text_of(app, "#tune-serving")

        kv = chart(app, "tune-kv")
        assert kv.data is not None and [s.label for s in kv.data.series] == ["baseline", "working"]
        assert kv.data.series[1].y.tolist() == pytest.approx(
            [100.0 * o for o in run.summary["kv_cache"]["timeline"]["occupancy"]]
        )
        assert kv.data.series[0].y.tolist() == pytest.approx(
            [100.0 * o for o in base.summary["kv_cache"]["timeline"]["occupancy"]]
        )


def test_the_serving_kernel_releases_the_gil() -> None:
    """The app runs serving runs in a worker thread: a kernel holding the GIL for its 100-200 ms
    stalled the UI loop on every Tune edit (benchmarks/bench_serving_app.py: 17 stalls over
    50 ms, max 126 ms, before nogil). The dynamic batcher's loop releases it the same way."""
    from model.runtime.kernel import simulate_kernel
    from model.runtime.serving_kernel import serving_kernel

    assert serving_kernel.targetoptions.get("nogil") is True
    assert simulate_kernel.targetoptions.get("nogil") is True


async def test_the_start_up_warm_up_runs_a_serving_baseline(
    make_app: MakeApp, serving_file: Path
) -> None:
    """The background warm-up runs what the Baseline step will show, so it does not wait."""
    app = make_app(serving_file)
    async with app.run_test(size=SMALL) as pilot:
        deadline = time.monotonic() + SETTLE_TIMEOUT_S  # it starts 0.3 s after the first frame
        while app.lab.cached_serving_run(subject(app.working)) is None:
            assert time.monotonic() < deadline, "the warm-up never ran the serving baseline"
            await pilot.pause(0.05)
        assert app.current_step == "packet"  # nothing asked for it but the warm-up
        assert app.lab.has_baseline(app.working)
