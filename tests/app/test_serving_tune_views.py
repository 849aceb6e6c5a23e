"""Tune's worksheet, Pareto and candidates views on a serving packet show the serving run (the
continuous scheduler), not the decode step through the dynamic batcher: the worksheet per phase
at the serving run's point with the mixed iteration's split, the search's front as TPOT p95
against TTFT p95 (f7 applies a point's continuous knobs), and each candidate's TTFT/TPOT tails,
tokens/s, preemptions and serving SLA verdict from its own serving run (Pilot, real runs)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from model.compiler.fusion import fusion_groups
from model.compiler.worksheet import worksheet
from triage.runs import run_serving_scenario
from triage.scenario import build_scenario
from triage.search import run_search
from workbench.app import WorkbenchApp
from workbench.lab.engine import subject
from workbench.screens.tune import SEARCH_TRIALS, TuneScreen

from .conftest import LARGE, SMALL, settle
from .test_lab_app import chart, tab_to, text_of
from .test_snapshots import compare

MakeApp = Callable[..., WorkbenchApp]


async def open_view(app: WorkbenchApp, pilot, view: str) -> TuneScreen:  # type: ignore[no-untyped-def]
    await pilot.pause()
    await pilot.press(str([s.id for s in app.steps].index("tune") + 1))
    await settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, TuneScreen)
    screen.deck.show_view(view)
    await settle(app, pilot)
    return screen


def decode_step_kv(packet) -> float:  # type: ignore[no-untyped-def]
    """Mean KV length over every decode step of the length mixes, by enumeration: a request of
    prompt P and output O makes O - 1 decode steps reading P + 1 ... P + O - 1 tokens."""
    g = packet.inputs.workload.generation
    total = steps = 0.0
    for p, wp in zip(g.prompt_len.values, g.prompt_len.weights, strict=True):
        for o, wo in zip(g.output_len.values, g.output_len.weights, strict=True):
            total += wp * wo * sum(p + j for j in range(1, o))
            steps += wp * wo * (o - 1)
    return total / steps


async def test_the_worksheet_shows_each_phase_at_the_serving_runs_point(
    make_app: MakeApp, serving_file: Path
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=LARGE) as pilot:
        await open_view(app, pilot, "tune-worksheet")
        loaded = subject(app.working).loaded
        scenario = build_scenario(loaded)
        run = run_serving_scenario(scenario, loaded.name).summary  # workbench run's figures
        # Little's law on the run: sequences decoding at once on the (one) engine.
        assert scenario.hardware.cores == 1
        decodes = round(
            run["throughput_per_s"] * (run["latency_ms"]["mean"] - run["ttft_ms"]["mean"]) / 1e3
        )
        kv = round(decode_step_kv(app.working.packet))
        shown = text_of(app, "#worksheet-table")
        assert f"{decodes} decodes (KV {kv:,}) + prompt 1,020 tokens" in shown
        # The decode phase is the compile-plan model at that batch and KV length ...
        block = scenario.block
        decode = worksheet(dataclasses.replace(block, phase="decode"), scenario.hardware,
                           "standard", {}, decodes, kv)  # fmt: skip
        assert f"batch {decodes} x KV {kv:,}): block " in shown
        assert f"block {decode['totals']['block_time_us']:,.1f} us" in shown
        prefill = worksheet(dataclasses.replace(block, phase="prefill"), scenario.hardware,
                            "standard", {}, 1, 1020)  # fmt: skip
        assert f"block {prefill['totals']['block_time_us']:,.1f} us" in shown
        for kernel in decode["kernels"]:
            assert f"{kernel['time_us']:,.1f}" in shown
        # ... and the run's iteration table prices the decode step's token-parallel kernels
        # exactly as those kernels (d <= 64: no padding), over every layer.
        sheet = app.lab.cached_serving_worksheet(subject(app.working), subject(app.working))
        assert sheet is not None
        split = sheet["iteration"]["working"]
        token_parallel_us = sum(
            k["time_us"] for k in decode["kernels"] if "attention" not in k["ops"]
        )
        assert split.decode_alone_ms - split.decode_attention_ms == pytest.approx(
            token_parallel_us * block.layers / 1e3, rel=1e-12
        )
        assert f"decode step {split.decode_alone_ms:,.2f} + prefill {split.chunk_ms:,.2f}" in (
            " ".join(shown.split())  # wrapped lines joined
        )
        assert split.chunk_ms > 0  # a prompt beside the decodes costs the decodes time


async def test_the_worksheet_follows_the_working_plan_and_chunking(
    make_app: MakeApp, serving_file: Path
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=LARGE) as pilot:
        screen = await open_view(app, pilot, "tune-worksheet")
        fusion = screen.editor("tune-fusion")
        fusion.input.focus()
        await pilot.press("ctrl+u", *"none", "enter")
        await settle(app, pilot)
        assert screen.config.fusion == "none"
        shown = text_of(app, "#worksheet-table")
        unfused = len(fusion_groups(screen.working_subject(app.working).scenario.block, "none"))
        assert f"{unfused} launches (baseline 7)" in shown
        assert "compute -> memory" in shown or "compute -> launch" in shown  # a bound shifted

        await tab_to(app, pilot, "tune-batch_policy-chunked_prefill")
        for _ in range(3):
            if screen.config.batch_policy.chunked_prefill:
                break
            await pilot.press("down")
            await settle(app, pilot)
        budget = await tab_to(app, pilot, "tune-batch_policy-max_num_batched_tokens")
        await pilot.press("end", "ctrl+u", *"768", "enter")
        await settle(app, pilot)
        assert screen.config.batch_policy.max_num_batched_tokens == 768, budget.problem
        sheet = app.lab.cached_serving_worksheet(
            screen.working_subject(app.working), subject(app.working)
        )
        assert sheet is not None
        point = sheet["point"]
        assert point["chunked"] and point["chunk"] == 768 - point["decode_batch"]
        assert f"+ chunk {point['chunk']:,} tokens" in text_of(app, "#worksheet-table")


async def test_candidates_show_each_candidates_serving_run(
    make_app: MakeApp, serving_file: Path
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=LARGE) as pilot:
        await open_view(app, pilot, "tune-candidates")
        shown = text_of(app, "#candidates-table")
        loaded = subject(app.working).loaded

        def summary(name: str | None) -> dict:  # what `workbench run [--candidate]` computes
            return run_serving_scenario(build_scenario(loaded, name), loaded.name).summary

        base = summary(None)
        for candidate in app.working.packet.candidates:
            s = summary(candidate.name)
            ok = all(v is not False for v in s["sla"].values())
            assert f"{'✓' if ok else '✗'} {candidate.name} · SLA" in shown
            for label, key, fmt in (("TTFT", "ttft_ms", ",.1f"), ("TPOT", "tpot_ms", ",.2f")):
                for p in ("p95", "p99"):
                    now, then = s[key][p], base[key][p]
                    head = f"{label} {p}" if p == "p95" else p  # 'TTFT p95 240.3 (-26.2) p99 ...'
                    assert f"{head} {now:{fmt}} ({now - then:+{fmt}})" in shown, (candidate, key)
            assert f"{s['preemptions']:,} preemptions" in shown
        kv = next(c for c in app.working.packet.candidates if c.name == "small-kv-cache")
        small = summary(kv.name)
        assert small["sla"]["ttft_p95_ok"] is False and small["preemptions"] > 0
        assert "✗ small-kv-cache · SLA missed: TTFT p95" in shown


async def test_the_search_front_is_tpot_against_ttft_and_f7_applies_a_serving_point(
    make_app: MakeApp, serving_file: Path
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=LARGE) as pilot:
        screen = await open_view(app, pilot, "tune-kv")
        await pilot.press("f6")
        await settle(app, pilot)
        assert screen.deck.current == "tune-pareto"
        loaded = subject(app.working).loaded
        expected = run_search(loaded, SEARCH_TRIALS, app.working.packet.seed, "tpot_p95")
        assert [t.number for t in screen.pareto] == [t.number for t in expected.pareto]
        data = chart(app, "pareto-chart").data
        assert data is not None
        front = sorted(expected.pareto, key=lambda t: t.row["ttft_p95_ms"])
        assert data.values("front").tolist() == [t.row["tpot_p95_ms"] for t in front]
        assert data.series[0].x.tolist() == [math.log10(t.row["ttft_p95_ms"]) for t in front]
        sla = app.working.packet.inputs.sla
        assert data.hlines == (sla.tpot_p95_ms,)
        assert data.hline_labels == (f"TPOT SLA {sla.tpot_p95_ms:g}",)
        ttft_line = data.series[1]
        assert ttft_line.label == f"TTFT SLA {sla.ttft_p95_ms:g}"
        assert np.all(ttft_line.x == math.log10(sla.ttft_p95_ms))
        table = text_of(app, "#pareto-table")
        assert "TTFT p95" in table and "TPOT p95" in table and "preempt" in table
        for t in expected.pareto:
            assert (
                f"{t.row['ttft_p95_ms']:,.1f}" in table and f"{t.row['tpot_p95_ms']:,.2f}" in table
            )

        await pilot.press("f7")
        await settle(app, pilot)
        point = expected.pareto[0]
        assert screen.config == point.config
        assert screen.config.batch_policy.scheduler == "continuous"
        run, _ = screen.shown_serving
        # The serving line shows the point's serving run: the search row's figures.
        assert run.summary["tpot_ms"]["p95"] == point.row["tpot_p95_ms"]
        assert run.summary["ttft_ms"]["p95"] == point.row["ttft_p95_ms"]


@pytest.mark.parametrize("view", ["tune-worksheet", "tune-candidates", "tune-pareto"])
async def test_serving_tune_tables_match_their_snapshots(
    make_app: MakeApp, serving_file: Path, monkeypatch: pytest.MonkeyPatch, view: str
) -> None:
    """The worksheet, candidates and Pareto views of the serving example at 80x24 under
    NO_COLOR (the Pareto view after f6): wrapped, never cut."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(serving_file)
    async with app.run_test(size=SMALL) as pilot:
        await open_view(app, pilot, view)
        if view == "tune-pareto":
            await pilot.press("f6")
            await settle(app, pilot)
        name = f"tune-serving-{view.removeprefix('tune-')}-no-color-80x24"
        failure = compare(name, app.export_screenshot(title=name), SMALL)
    assert not failure, failure
