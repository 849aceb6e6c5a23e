"""Diagnose on a serving packet: the serving tail against the SLA first, then the Shapley
attribution of its p99 over the serving drivers and the serving bottleneck class, with charts
of the drivers, the slowest requests' parts and the KV cache (not the decode step's dynamic
run)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from model.runtime.serving_attribution import CLASSES
from triage.runs import run_serving_scenario
from triage.scenario import build_scenario
from workbench.app import WorkbenchApp
from workbench.lab.engine import subject
from workbench.lab.views import ms

from .conftest import LARGE, SMALL, settle, step_key
from .test_lab_app import chart, text_of
from .test_snapshots import compare

MakeApp = Callable[..., WorkbenchApp]


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
async def test_diagnose_shows_the_serving_tail_its_attribution_and_class(
    make_app: MakeApp, serving_file: Path, size: tuple[int, int]
) -> None:
    app = make_app(serving_file)
    async with app.run_test(size=size) as pilot:
        await pilot.press(step_key(app, "diagnose"))
        await settle(app, pilot)
        base = subject(app.working)
        run = app.lab.cached_serving_diagnosis(base)
        assert run is not None, "Diagnose ran the attributed serving baseline"
        s = run.summary
        # The same diagnosis as `workbench run --json` of the packet's baseline.
        loaded = base.loaded
        fresh = run_serving_scenario(build_scenario(loaded), loaded.name, attribution=True)
        assert fresh.summary == s
        head = text_of(app, "#diagnose-class")
        lines = head.splitlines()
        # Tail first: TTFT, TPOT, latency with p99 then p95, then the class.
        for label, key in (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms"), ("latency", "latency_ms")):
            line = next(line for line in lines if line.startswith(label))
            assert f"p99 {ms(s[key]['p99'])}" in line and f"p95 {ms(s[key]['p95'])}" in line
        sla = s["sla"]
        tpot_line = next(line for line in lines if line.startswith("TPOT"))
        assert ("✓" if sla["tpot_p95_ok"] else "✗") + " <= 22.5" in tpot_line
        cls = s["classification"]
        assert cls["primary"]["class"] in CLASSES  # the serving classes, not the decode step's
        assert f"Bottleneck: {cls['primary']['class']}" in head
        assert head.index("TTFT") < head.index("latency") < head.index("Bottleneck")
        body = text_of(app, "#diagnose-checklist")
        cf = s["tail_attribution_ms"]["counterfactual"]
        assert f"Shapley, {len(cf['drivers'])} drivers, {cf['runs']} re-runs" in body
        tpot = next(line for line in body.splitlines() if line.startswith("TPOT"))
        drop = cf["tpot"]["p99_drop_if_off_ms"]["prefill_interference"]
        assert f"interference {ms(drop)}" in tpot
        assert "evidence:" in body
        # The serving charts, not the dynamic batcher's.
        assert not app.screen.query_one("#diagnose-deck").display
        assert app.screen.query_one("#diagnose-serving-deck").display
        drivers = chart(app, "chart-serving-drivers")
        assert drivers.data is not None and drivers.drawn
        # one bar group per driver that could act in this run, then what is left with all off
        labels = {"prefill_interference": "interference"}
        expected = tuple(labels.get(d, d) for d in cf["drivers"])
        assert drivers.data.categories == (*expected, "all off")
        latency = drivers.data.values("latency")
        p99 = cf["latency"]["p99_ms"]
        assert latency[0] == pytest.approx(
            100.0 * cf["latency"]["p99_drop_if_off_ms"]["prefill_interference"] / p99
        )
        assert latency[-1] == pytest.approx(100.0 * cf["latency"]["p99_all_off_ms"] / p99)
        await pilot.press("f2")
        await settle(app, pilot)
        parts = chart(app, "chart-serving-parts")
        assert parts.drawn and parts.data is not None
        slowest = s["tail_attribution_ms"]["slowest_1pct"]
        assert parts.data.values("slowest 1%")[-1] == pytest.approx(slowest["decode"] / 1e3)
        await pilot.press("f2")
        await settle(app, pilot)
        kv = chart(app, "chart-serving-kv")
        assert kv.drawn and kv.data is not None and kv.data.hlines == (100.0,)


async def test_a_dynamic_packet_keeps_its_diagnosis(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press(step_key(app, "diagnose"))
        await settle(app, pilot)
        base = subject(app.working)
        assert app.lab.cached_run(base) is not None
        assert app.lab.cached_serving_diagnosis(base) is None
        assert app.screen.query_one("#diagnose-deck").display
        assert not app.screen.query_one("#diagnose-serving-deck").display


@pytest.mark.parametrize("no_color", [False, True], ids=["dark", "no-color"])
async def test_serving_diagnose_matches_its_snapshot(
    make_app: MakeApp, serving_file: Path, monkeypatch: pytest.MonkeyPatch, no_color: bool
) -> None:
    """A serving packet's Diagnose at 80x24 (and with NO_COLOR: marks and glyphs, no colour)."""
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(serving_file)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press(step_key(app, "diagnose"))
        await settle(app, pilot)
        assert app.current_step == "diagnose"
        tag = "no-color" if no_color else app.theme
        name = f"diagnose-serving-{tag}-{SMALL[0]}x{SMALL[1]}"
        failure = compare(name, app.export_screenshot(title=name), SMALL)
    assert not failure, failure
