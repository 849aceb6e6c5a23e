"""The JSON summary of `workbench run`: contract, determinism, SLA, attribution, profiles."""

from __future__ import annotations

import dataclasses
import itertools
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from benchmarks.synthetic_decode import decode_all_compiled, decode_table
from model.runtime.inputs import SLA, Fallback, RuntimeHardware
from model.runtime.simulate import simulate
from model.runtime.stats import jain_index, measured, runtime_profiles
from model.runtime.summary import run_summary, summarize
from model.runtime.tail import (
    COMPONENTS,
    DRIVERS,
    active_drivers,
    compositions,
    counterfactual_attribution,
    counterfactual_order,
    finish_counterfactuals,
    latency_components,
    possible_drivers,
    shapley_values,
    start_reruns,
    tail_percentiles,
)
from tests.runtime.helpers import decode_config, pinned_config
from tests.runtime.laws import check_laws

CONTRACT = {
    "seed",
    "requests",
    "measured_requests",
    "latency_ms",
    "queue_wait_ms",
    "service_ms",
    "throughput_per_s",
    "core_utilization",
    "fairness_jain",
    "fallback_rate",
    "launches_per_request",
    "hbm_peak_demand_ratio",
    "tail_attribution_ms",
    "sla",
    "classification",
}


@pytest.fixture(scope="module")
def decode_run():
    cfg = decode_config(sla=SLA(p95_ms=150.0, p99_ms=100.0, min_throughput_per_s=500.0))
    return run_summary(
        cfg, decode_table("none"), all_compiled_table=decode_all_compiled("none"), command="cmd"
    )


def test_summary_has_the_contract_and_round_trips_json(decode_run) -> None:
    s = decode_run.summary
    assert set(s) >= CONTRACT
    assert set(s["latency_ms"]) == {"mean", "p50", "p95", "p99", "max"}
    assert set(s["queue_wait_ms"]) == set(s["service_ms"]) == {"mean", "p50", "p95", "p99"}
    assert json.loads(json.dumps(s)) == s
    assert s["requests"] == 6000 and s["measured_requests"] == 6000 - 300
    assert len(s["core_utilization"]) == 8
    assert s["fairness_jain"] == pytest.approx(jain_index(np.array(s["core_utilization"])))
    check_laws(decode_run.result)


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    table = decode_table("none")
    first = json.dumps(run_summary(decode_config(), table, command="c").summary)
    again = json.dumps(run_summary(decode_config(), table, command="c").summary)
    other = json.dumps(run_summary(decode_config(seed=8), table, command="c").summary)
    assert first == again
    assert first != other


def test_sla_flags_follow_the_targets(decode_run) -> None:
    s = decode_run.summary
    assert s["sla"]["p95_ok"] == (s["latency_ms"]["p95"] <= 150.0)
    assert s["sla"]["p99_ok"] == (s["latency_ms"]["p99"] <= 100.0)
    assert s["sla"]["throughput_ok"] == (s["throughput_per_s"] >= 500.0)
    assert run_summary(decode_config(), decode_table("none")).summary["sla"]["p95_ok"] is None


def test_fallback_is_first_class(decode_run) -> None:
    s, result = decode_run.summary, decode_run.result
    m = measured(result)
    fallback_shape = result.requests.seq_len[m] == 4096  # above the largest bucket (2048)
    assert s["fallback_rate"] == pytest.approx(np.mean(result.requests.fallback[m]))
    assert s["fallback_rate"] >= np.mean(fallback_shape)  # padding drags others along
    cost = s["fallback_cost_ms"]
    assert cost["stalled_batches"] >= 1 and cost["stall_total_ms"] >= 400.0
    assert cost["generic_path_cost_known"] is True
    assert cost["mean_per_fallback_request_ms"] > 0


def test_components_add_up_to_latency_per_request(decode_run) -> None:
    result = decode_run.result
    parts = latency_components(result)
    total = sum(parts[c] for c in COMPONENTS)
    latency = result.requests.finish_ms - result.requests.arrival_ms
    np.testing.assert_allclose(total, latency, rtol=1e-9, atol=1e-9)
    assert all(np.all(parts[c] >= -1e-9) for c in COMPONENTS if c != "fallback")


def test_group_compositions_match_per_request_parts(decode_run) -> None:
    result = decode_run.result
    p99_tail, _, mean = compositions(result)
    parts = latency_components(result)
    m = measured(result)
    latency = (result.requests.finish_ms - result.requests.arrival_ms)[m]
    slow = np.argsort(latency, kind="stable")[::-1][: p99_tail["requests"]]
    for c in COMPONENTS:
        assert p99_tail[c] == pytest.approx(np.mean(parts[c][m][slow]), abs=1e-9)
        assert mean[c] == pytest.approx(np.mean(parts[c][m]), abs=1e-9)
    assert p99_tail["latency"] >= decode_run.summary["latency_ms"]["p99"]


def test_shapley_split_is_exact_and_matches_reruns(decode_run) -> None:
    cf = decode_run.summary["tail_attribution_ms"]["counterfactual"]
    drops = cf["p99_drop_if_off_ms"]
    assert sum(drops.values()) == pytest.approx(cf["p99_ms"] - cf["p99_all_off_ms"], abs=1e-9)
    assert cf["runs"] == 8  # round-robin, a fallback shape and contention: all three active
    # The all-off corner is a real run: pooled placement, all compiled, no contention.
    cfg = dataclasses.replace(
        decode_config(placement="central-queue", contention=False), fallback=Fallback()
    )
    off = simulate(cfg, decode_all_compiled("none"))
    latency = (off.requests.finish_ms - off.requests.arrival_ms)[measured(off)]
    assert cf["p99_all_off_ms"] == pytest.approx(np.percentile(latency, 99))


@pytest.mark.parametrize("longest_first", [True, False])
@pytest.mark.parametrize("size", [0, 1, 2, 3])
def test_counterfactual_order_runs_every_subset_once(size, longest_first) -> None:
    """Every non-empty subset of the active drivers is re-run exactly once; overlapping runs
    keep the contention-on ones (the slow ones) first, one-at-a-time runs go in subset order."""
    for drivers in itertools.combinations(DRIVERS, size):
        runs = counterfactual_order(drivers, longest_first=longest_first)
        assert len(runs) == len(set(runs)) == 2 ** len(drivers) - 1
        assert all(runs) and set().union(*runs) <= set(drivers)
        off = ["contention" in r for r in runs]
        assert (
            off == sorted(off)
            if longest_first
            else [len(r) for r in runs] == sorted(map(len, runs))
        )


def test_the_summary_overlapping_its_reruns_equals_the_plain_attribution(decode_run) -> None:
    """`summarize` starts the re-runs before its other statistics and takes the run's own tail
    from the headline; the plain path (large runs) re-runs it in the pool: same numbers."""
    result = decode_run.result
    plain = counterfactual_attribution(
        result, decode_table("none"), all_compiled_table=decode_all_compiled("none")
    )
    assert decode_run.summary["tail_attribution_ms"]["counterfactual"] == plain


def test_shapley_values_of_a_known_game() -> None:
    """v(S) for drivers a, b: a alone saves 4, b alone 2, both 10 (synergy 4 split evenly)."""
    v = {frozenset(): 20.0, frozenset("a"): 16.0, frozenset("b"): 18.0, frozenset("ab"): 10.0}
    assert shapley_values(v, ("a", "b")) == {"a": 6.0, "b": 4.0}


def test_profiles_are_compact_and_consistent(decode_run) -> None:
    result = decode_run.result
    prof = runtime_profiles(result, bins=30, hbm_points=100)
    assert prof.wait_counts.sum() == decode_run.summary["measured_requests"]
    assert np.all(np.diff(prof.wait_cdf_ms) >= 0)
    assert prof.wait_cdf_ms[-1] == pytest.approx(
        np.max(result.requests.queue_wait_ms[measured(result)])
    )
    assert len(prof.batch_counts) == 8 and prof.batch_counts.sum() > 0
    assert len(prof.hbm_time_ms) <= 100
    assert prof.hbm_demand_ratio.max() == pytest.approx(
        result.hbm.demand_gbs.max() / result.hbm.capacity_gbs
    )


def test_bad_table_inputs_get_one_line_errors() -> None:
    table = decode_table("none", max_batch=4)
    with pytest.raises(ValueError, match=r"no row for batch size 5 \(batch_policy.max_batch = 8\)"):
        simulate(decode_config(), table)
    cfg = decode_config(hardware=RuntimeHardware(cores=8, hbm_gbs=1600.0))
    with pytest.raises(ValueError, match="service table was given"):
        simulate(cfg, None)
    small = decode_table("none", shapes=(512, 1024), compiled_shapes=(512, 1024))
    with pytest.raises(ValueError, match="seq_len value 2048 is not a column"):
        simulate(cfg, small)


def test_a_plain_run_loads_neither_polars_nor_textual() -> None:
    """`workbench run` must start fast: the run path stays off polars and textual."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from model.runtime.summary import run_summary\n"
        "from model.runtime.validation import poisson_pinned\n"
        "run_summary(poisson_pinned(cores=2, rate_per_s=1000.0, requests=500))\n"
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in ('polars', 'textual')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == ""


def _scenarios():
    from packets.examples import example_names, example_path
    from packets.load import load_packet

    for name in example_names():
        loaded = load_packet(example_path(name))
        for candidate in [None, *(c.name for c in loaded.packet.candidates)]:
            yield name, loaded, candidate


@pytest.mark.parametrize("seed", [3, 11])
def test_run_summary_starting_reruns_before_the_run_gives_the_same_bytes(seed) -> None:
    """`run_summary` starts the re-runs beside the simulation, over the drivers possible before
    it ends; every shipped example and candidate gives the bytes of `summarize` after
    `simulate`, which starts them from the finished run's active drivers."""
    from triage.scenario import build_scenario

    for name, loaded, candidate in _scenarios():
        sc = build_scenario(loaded, candidate, seed=seed)
        cfg, table, ideal = sc.runtime, sc.service_table, sc.all_compiled_table
        after = summarize(simulate(cfg, table, all_compiled_table=ideal), table,
                          all_compiled_table=ideal, command="cmd")  # fmt: skip
        beside = run_summary(cfg, table, all_compiled_table=ideal, command="cmd").run
        assert json.dumps(beside.to_json()) == json.dumps(after.to_json()), (name, candidate)


@pytest.mark.parametrize("placement", ["central-queue", "round-robin", "random", "least-loaded"])
@pytest.mark.parametrize("contention", [True, False])
@pytest.mark.parametrize("stall_ms", [0.0, 400.0])
def test_possible_drivers_contain_the_active_ones(placement, contention, stall_ms) -> None:
    """What can be known before the run is a superset of what the run finds active."""
    cfg = decode_config(placement=placement, contention=contention)
    cfg = dataclasses.replace(cfg, workload=dataclasses.replace(cfg.workload, requests=1500))
    cfg = dataclasses.replace(
        cfg, fallback=dataclasses.replace(cfg.fallback, compile_stall_ms=stall_ms)
    )
    table = decode_table("none")
    result = simulate(cfg, table, all_compiled_table=decode_all_compiled("none"))
    possible = possible_drivers(cfg, table, result.stream)
    assert set(active_drivers(result, table)) <= set(possible)
    assert ("placement" in possible) == (placement != "central-queue")
    assert ("contention" in possible) == contention


def test_possible_drivers_of_a_pinned_run_without_fallback_shapes() -> None:
    cfg = pinned_config(cores=2, rate_per_s=1000.0, requests=500)
    result = simulate(cfg)
    assert possible_drivers(cfg, None, result.stream) == active_drivers(result, None) == ()


def test_reruns_of_a_driver_found_inactive_are_dropped(decode_run) -> None:
    """Re-runs started over more drivers than the run turned out to have: the attribution over
    the active ones is the one started over exactly those (the others are cancelled or
    ignored), and a driver never started for is refused."""
    result = decode_run.result
    table, ideal = decode_table("none"), decode_all_compiled("none")
    base = tail_percentiles(
        (result.requests.finish_ms - result.requests.arrival_ms)[measured(result)]
    )

    def attribution(started, kept):
        with ThreadPoolExecutor(1) as pool:
            pending = start_reruns(result.config, result.stream, result.first_measured, table,
                                   ideal, pool, started)  # fmt: skip
            return finish_counterfactuals(pending, base, pinned=False, all_compiled_table=ideal,
                                          drivers=kept)  # fmt: skip

    exact = attribution(("placement", "contention"), ("placement", "contention"))
    assert attribution(DRIVERS, ("placement", "contention")) == exact
    assert exact["runs"] == 4 and exact["p99_drop_if_off_ms"]["fallback"] == 0.0
    with pytest.raises(ValueError, match="not for"):
        attribution(("placement",), ("placement", "contention"))
