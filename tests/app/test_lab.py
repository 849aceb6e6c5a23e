"""The lab's compute layer, without a screen: runs, caching, load curves, worksheets, views."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet
from packets.model_specs import fusion_spec, tile_spec
from packets.schema import PLACEMENTS
from triage.runs import run_packet
from triage.scenario import build_scenario
from workbench.core.facts import shape_mapping
from workbench.core.session import WorkingPacket, apply_edit, open_working
from workbench.lab import charts as lab_charts
from workbench.lab import views as lab_views
from workbench.lab.config import edit_config
from workbench.lab.engine import (
    LATENCY_PERCENTILES,
    LOAD_FACTORS,
    TABLES,
    Cancelled,
    Lab,
    LabPreview,
    LabRun,
    compute_load_curve,
    loaded_packet,
    prefetch_tables,
    subject,
)


def working_of(name: str = DEFAULT_EXAMPLE, requests: int | None = 4000) -> WorkingPacket:
    """An example as a working packet (fewer requests: the same model, a quicker test)."""
    path = Path(example_path(name))
    working = open_working(load_packet(path), path)
    if requests is not None:
        edited = apply_edit(working, ("inputs", "workload", "requests"), requests)
        assert isinstance(edited, WorkingPacket)
        working = edited
    return working


@pytest.fixture(scope="module")
def working() -> WorkingPacket:
    return working_of()


@pytest.fixture(scope="module")
def lab() -> Lab:
    return Lab()


def test_subject_keys_change_with_every_input_a_run_depends_on(working: WorkingPacket) -> None:
    base = subject(working)
    assert subject(working).key == base.key
    edited = apply_edit(working, ("inputs", "workload", "arrivals", "rate_per_s"), 380.0)
    assert isinstance(edited, WorkingPacket)
    assert subject(edited).key != base.key
    reseeded = apply_edit(working, ("seed",), 7)
    assert isinstance(reseeded, WorkingPacket)
    assert subject(reseeded).key != base.key
    candidate = subject(working, name="standard-fusion")
    assert candidate.config.fusion == "standard" and candidate.dtype_from == "standard-fusion"
    assert candidate.key != base.key
    assert subject(working, candidate.config, name="working").key != candidate.key


def test_a_run_is_the_run_command_and_is_cached(working: WorkingPacket, lab: Lab) -> None:
    first = lab.run(subject(working))
    before = lab.model_runs
    again = lab.run(subject(working))
    assert again is first and lab.model_runs == before  # served from the cache
    loaded = load_packet(example_path(DEFAULT_EXAMPLE))
    expected = run_packet(loaded, requests=4000).summary
    shown = {k: v for k, v in first.summary.items() if k != "classification"}
    assert json.dumps(shown, sort_keys=True) == json.dumps(
        {k: v for k, v in expected.items() if k != "classification"}, sort_keys=True
    )
    assert (
        first.summary["classification"]["scores_p99_tail"]
        == (expected["classification"]["scores_p99_tail"])
    )
    # The latency curve is read at the same percentiles the summary reports.
    at = {p: i for i, p in enumerate(LATENCY_PERCENTILES)}
    assert first.latency_ms[at[99.0]] == pytest.approx(first.summary["latency_ms"]["p99"])
    assert first.latency_ms[at[95.0]] == pytest.approx(first.summary["latency_ms"]["p95"])
    assert np.all(np.diff(first.latency_ms) >= 0)


def test_concurrent_requests_for_one_subject_run_the_model_once(working: WorkingPacket) -> None:
    lab = Lab()
    wanted = subject(working, name="aggressive-fusion")
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(lab.run(wanted))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert lab.model_runs == 1 and len({id(r) for r in results}) == 1
    assert lab.has_baseline(working) is False


def test_a_preview_is_the_runs_simulation_and_the_run_completes_it(
    working: WorkingPacket,
) -> None:
    """Tune shows a preview (the simulation alone) first, then its completed run: the run
    must be the run computed in one go, byte for byte, with no second simulation."""
    wanted = subject(working, name="standard-fusion-bucketed")
    lab = Lab()
    preview = lab.preview(wanted)
    assert isinstance(preview, LabPreview) and lab.preview(wanted) is preview  # cached
    assert lab.cached_run(wanted) is None and lab.model_runs == 0
    completed = lab.run(wanted)
    assert completed.latency_ms is preview.latency_ms  # the preview's simulation, reused
    assert completed.profiles is preview.profiles
    assert lab.preview(wanted) is completed  # once complete, the run itself
    whole = Lab().run(wanted)
    assert isinstance(whole, LabRun)
    assert json.dumps(completed.summary, sort_keys=True) == json.dumps(
        whole.summary, sort_keys=True
    )
    assert completed.latency_ms.tolist() == whole.latency_ms.tolist()


def test_buckets_come_from_the_models_service_table() -> None:
    working = working_of("mapping-dynamic-shapes")
    run = Lab().run(subject(working))
    assert run.buckets is not None
    mix = working.packet.inputs.workload.shapes.seq_len
    rule = shape_mapping(mix.values, mix.weights, working.packet.baseline.compiled_shapes.seq_len)
    assert run.buckets.shapes.tolist() == sorted(mix.values)
    assert run.buckets.fallback.tolist() == rule.fallback.tolist()  # 3072 and 4096 fall back
    assert run.buckets.compiled_shape.tolist() == rule.compiled_shape.tolist()
    assert run.buckets.fallback_share == pytest.approx(0.10)


def test_load_curve_runs_each_factor_with_progress_and_can_be_cancelled(
    working: WorkingPacket, lab: Lab
) -> None:
    seen: list[tuple[int, int]] = []
    curve = lab.load_curve(subject(working), progress=lambda d, n: seen.append((d, n)))
    assert curve.factors.tolist() == list(LOAD_FACTORS)
    rate = working.packet.inputs.workload.arrivals.rate_per_s
    assert curve.rate_per_s.tolist() == pytest.approx([rate * f for f in LOAD_FACTORS])
    assert seen[-1] == (len(LOAD_FACTORS), len(LOAD_FACTORS))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    at_packet_load = list(LOAD_FACTORS).index(1.0)
    run = lab.run(subject(working))  # the same seed and requests: the same p99 at load 1.0
    assert curve.p99_ms[at_packet_load] == pytest.approx(run.summary["latency_ms"]["p99"])
    assert curve.throughput_per_s[0] < curve.throughput_per_s[-1]
    with pytest.raises(Cancelled):
        compute_load_curve(subject(working), cancelled=lambda: True)


def test_worksheet_is_the_worksheet_commands(working: WorkingPacket, lab: Lab) -> None:
    from model.compiler.worksheet import worksheet

    candidate = subject(working, name="standard-fusion-wide-tiles")
    sheet = lab.worksheet(candidate, subject(working))
    assert lab.cached_worksheet(candidate, subject(working)) is sheet
    loaded = load_packet(example_path(DEFAULT_EXAMPLE))
    scenario, base = build_scenario(loaded, "standard-fusion-wide-tiles"), build_scenario(loaded)
    expected = worksheet(
        scenario.block,
        scenario.hardware,
        fusion_spec(scenario.config),
        tile_spec(scenario.config),
        8,
        512,
        baseline_fusion=fusion_spec(base.config),
        baseline_tiles=tile_spec(base.config),
    )
    assert sheet == expected
    assert sheet["totals"]["launches_per_block"] < sheet["totals"]["baseline_launches_per_block"]


def test_the_worksheet_view_shows_each_kernel_s_error_band(
    working: WorkingPacket, lab: Lab
) -> None:
    from rich.console import Console

    from workbench.screens.tune_views import worksheet_view

    sheet = lab.worksheet(subject(working, name="standard-fusion-wide-tiles"), subject(working))
    for compact, width in ((True, 80), (False, 160)):
        console = Console(width=width, record=True, color_system=None)
        console.print(worksheet_view(sheet, compact=compact))
        text = console.export_text()
        assert "10-90%" in text
        low, high = sheet["kernels"][0]["band_us"]
        assert f"{low:,.1f}-{high:,.1f}" in text


def test_views_read_the_run(working: WorkingPacket, lab: Lab) -> None:
    from model.runtime.bottleneck import SECONDARY_SHARE

    run = lab.run(subject(working))
    s = run.summary
    assert [label for label, _ in lab_views.tail_first(s)][:2] == ["p99", "p95"]
    verdicts = lab_views.sla_verdicts(s, working.packet)
    assert [v.ok for v in verdicts] == [
        s["sla"]["p99_ok"],
        s["sla"]["p95_ok"],
        s["sla"]["throughput_ok"],
    ]
    stages = lab_views.pipeline(run, working.packet, "central-queue")
    assert [stage.name for stage in stages] == [
        "compile plan",
        "runtime queue",
        "core placement",
        "completion",
    ]
    layers = working.packet.inputs.workload.block.layers
    assert stages[0].figures[0] == f"11 kernels x {layers} layers"  # fusion none: one per op
    assert f"{s['throughput_per_s']:,.1f}/s" in stages[3].figures
    branches = lab_views.checklist(s, working.packet)
    scores = s["classification"]["scores_p99_tail"]
    assert branches[0].clear == (s["sla"]["p99_ok"] and s["sla"]["p95_ok"])
    assert branches[1].clear == (scores["core imbalance"] < SECONDARY_SHARE)
    memory = max(scores["memory bandwidth"], scores["SRAM spill"])
    assert branches[2].clear == (memory < SECONDARY_SHARE)
    bars = lab_views.driver_bars(s)
    drops = s["tail_attribution_ms"]["counterfactual"]["p99_drop_if_off_ms"]
    assert bars.p99_drop_ms[bars.parts.index("contention")] == drops["contention"]
    assert bars.p99_drop_ms[bars.parts.index("queueing")] == 0.0
    composition = s["tail_attribution_ms"]["slowest_1pct"]
    assert bars.slowest_1pct_ms.tolist() == [composition[p] for p in bars.parts]


def test_comparison_is_against_the_baseline(working: WorkingPacket, lab: Lab) -> None:
    base = lab.run(subject(working))
    fix = lab.run(subject(working, name="standard-fusion-8192-bucket"))
    c = lab_views.compare(fix, base)
    assert c.p99_change_ms == pytest.approx(c.p99_ms - base.summary["latency_ms"]["p99"])
    assert c.p99_change_ms < 0  # compiling the long-context bucket cuts this packet's tail
    assert lab_views.compare(base, base).p99_change_ms == 0.0


def test_charts_carry_the_runs_figures(working: WorkingPacket, lab: Lab) -> None:
    base = lab.run(subject(working))
    wide = lab.run(subject(working, name="standard-fusion-wide-tiles"))
    latency = lab_charts.latency_chart(wide, base, working.packet)
    assert latency.values("working").tolist() == wide.latency_ms.tolist()
    assert latency.values("baseline").tolist() == base.latency_ms.tolist()
    sla = working.packet.inputs.sla
    assert latency.hlines == (sla.p95_ms, sla.p99_ms)
    drivers = lab_charts.driver_chart(base)
    assert "queueing" in drivers.categories and "imbalance" not in drivers.categories
    assert "imbalance" in drivers.title  # parts left out for being zero are named
    cores = lab_charts.core_chart(base)
    assert cores.values("busy %").tolist() == (base.profiles.core_utilization * 100).tolist()
    hbm = lab_charts.hbm_chart([("baseline", base)])
    assert hbm.series[0].peaks and hbm.hlines == (1.0,)


def test_a_pinned_service_distribution_runs_and_says_so(working: WorkingPacket) -> None:
    pinned = apply_edit(
        working,
        ("baseline", "service"),
        {"source": "distribution", "dist": "exponential", "mean_ms": 15.0},
    )
    assert isinstance(pinned, WorkingPacket)
    run = Lab().run(subject(pinned))
    assert run.buckets is None and run.summary["launches_per_request"] is None
    stages = lab_views.pipeline(run, pinned.packet, "central-queue")
    assert stages[0].figures[0] == "service times pinned"
    assert stages[3].figures[2] == "HBM n/a (pinned)"
    assert lab_charts.driver_chart(run).categories  # the tail still has parts to show


def test_a_subject_is_derived_once_and_shares_its_scenario(working: WorkingPacket) -> None:
    config = working.packet.baseline
    first = subject(working, config, name="working")
    assert subject(working, config, name="working") is first  # key built once per edit
    assert subject(working) is subject(working)
    assert first.scenario is first.scenario  # hardware resolved once per subject
    assert subject(working, config, name="other") is not first


def test_service_tables_are_memoized_by_plan(working: WorkingPacket) -> None:
    """A delay, placement or load edit reuses the plan's tables; a tile edit builds new ones."""
    base = working.packet.baseline
    policy = base.batch_policy
    placement = next(p for p in PLACEMENTS if p != base.placement)
    first = subject(working, base, name="working").scenario
    builds = TABLES.builds

    delayed = base.model_copy(
        update={"batch_policy": policy.model_copy(update={"max_queue_delay_ms": 7.5})}
    )
    moved = base.model_copy(update={"placement": placement})
    loaded = apply_edit(working, ("inputs", "workload", "arrivals", "rate_per_s"), 123.0)
    assert isinstance(loaded, WorkingPacket)
    for scenario in (
        subject(working, delayed, name="working").scenario,
        subject(working, moved, name="working").scenario,
        subject(loaded).scenario,
    ):
        assert scenario.service_table is first.service_table
        assert scenario.all_compiled_table is first.all_compiled_table
    assert TABLES.builds == builds

    # The memo's tables are the ones the scenario builds itself.
    own = build_scenario(loaded_packet(working), config=delayed)
    assert np.array_equal(own.service_table.time_ms, first.service_table.time_ms)

    # A batch size no other test uses (Tune builds the next arrow steps' tables ahead, and
    # TABLES is the process's).
    wider = base.model_copy(
        update={"batch_policy": policy.model_copy(update={"max_batch": policy.max_batch + 7})}
    )
    assert subject(working, wider, name="working").scenario.service_table is not (
        first.service_table
    )
    assert TABLES.builds == builds + 2  # the plan's table and its all-compiled counterfactual


def test_tables_built_ahead_serve_the_next_max_batch_steps(working: WorkingPacket) -> None:
    """After `prefetch_tables`, an arrow step on max_batch either way builds no table, and
    the tables it takes are those its scenario builds itself."""
    base = working.packet.baseline
    policy = base.batch_policy
    target = subject(working, base, name="working")
    prefetch_tables(target)
    assert prefetch_tables(target) == 0  # all kept already
    builds = TABLES.builds
    for size in (policy.max_batch + 1, policy.max_batch - 1):
        moved = base.model_copy(
            update={"batch_policy": policy.model_copy(update={"max_batch": size})}
        )
        scenario = subject(working, moved, name="working").scenario
        own = build_scenario(loaded_packet(working), config=moved)
        for name in ("service_table", "all_compiled_table"):
            kept, built = getattr(scenario, name), getattr(own, name)
            assert kept.batch_sizes.tolist() == list(range(1, size + 1))
            assert kept.time_ms.tobytes() == built.time_ms.tobytes(), name
    assert TABLES.builds == builds


def test_tables_ahead_stay_inside_the_schemas_batch_sizes(working: WorkingPacket) -> None:
    base = working.packet.baseline
    one = base.model_copy(
        update={"batch_policy": base.batch_policy.model_copy(update={"max_batch": 1})}
    )
    target = subject(working, one, name="working")
    assert target.scenario.service_table is not None  # its own tables first
    assert prefetch_tables(target, steps=(-1,)) == 0  # max_batch 0 does not exist


def test_a_table_being_built_is_waited_for_not_built_twice(working: WorkingPacket) -> None:
    """Tune's tables ahead and the edit that needs the same table: one build, both get it."""
    import time

    from workbench.lab.engine import TableMemo

    scenario = build_scenario(loaded_packet(working), config=working.packet.baseline)
    calls = []
    through = scenario._table

    def slow(compiled, kernels=None):  # type: ignore[no-untyped-def]
        calls.append(threading.current_thread().name)
        time.sleep(0.2)  # long enough for the second thread to ask meanwhile
        return through(compiled, kernels)

    object.__setattr__(scenario, "_table", slow)  # this scenario only (a frozen dataclass)
    memo, got = TableMemo(), []
    compiled = list(scenario.config.compiled_shapes.seq_len)
    threads = [threading.Thread(target=lambda: got.append(memo.table(scenario, compiled)))
               for _ in range(2)]  # fmt: skip
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and memo.builds == 1
    assert got[0] is got[1]


def test_tables_ahead_stop_once_asked(working: WorkingPacket) -> None:
    base = working.packet.baseline
    far = base.model_copy(
        update={"batch_policy": base.batch_policy.model_copy(update={"max_batch": 23})}
    )
    stop = threading.Event()
    stop.set()
    assert prefetch_tables(subject(working, far, name="working"), stop=stop) == 0
    stop.clear()  # the same call unstopped builds them: none was built already
    assert prefetch_tables(subject(working, far, name="working"), stop=stop) > 0


def test_a_hardware_file_is_read_once_for_an_edits_check_and_its_run(tmp_path: Path) -> None:
    packet = tmp_path / "packet.yaml"
    text = Path(example_path(DEFAULT_EXAMPLE)).read_text()
    assert "    preset: npu-8c\n" in text
    packet.write_text(text.replace("    preset: npu-8c\n", "    file: hw.yaml\n", 1))
    hardware = tmp_path / "hw.yaml"
    hardware.write_text("format: handoff-hardware/1\nname: npu-file\npreset: npu-8c\n")
    working = open_working(load_packet(packet), packet)
    config = edit_config(subject(working), ("batch_policy", "max_queue_delay_ms"), 3.0)
    hardware.unlink()  # read for the edit's check: the run must not read it again
    edited = subject(working, config, name="working").scenario
    assert edited.hardware.name == "npu-file"
    assert edited.config.batch_policy.max_queue_delay_ms == 3.0
