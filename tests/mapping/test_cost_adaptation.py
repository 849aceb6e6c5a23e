"""Retuning cost mechanisms, runtime adaptation gain and the ranking of actions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.compiler.blocks import BlockSpec
from model.compiler.fusion import fusion_groups
from model.compiler.op_sizes import tensor_bytes
from model.mapping.actions import gain_per_cost, rank_actions, screen, shape_savings
from model.mapping.adaptation import gain, run_figures
from model.mapping.cost import (
    KERNEL_BINARY_BYTES,
    CompiledPlan,
    boundary_tensors,
    bucket_costs,
    retune_cost,
)
from model.mapping.requests import (
    observed_mix,
    observed_vs_simulated,
    replay_stream,
    simulated_request_rows,
)
from model.runtime.simulate import simulate
from model.runtime.workload import generate_requests
from triage.scenario import build_scenario

BLOCK = BlockSpec("llama-decoder", "prefill", "bf16", 4096, 32, 8, 128, 14336, 32)


def test_more_fusion_keeps_fewer_tensors_in_hbm() -> None:
    none, standard, aggressive = (set(boundary_tensors(BLOCK, f))
                                  for f in ("none", "standard", "aggressive"))  # fmt: skip
    assert aggressive < standard < none
    assert {"x", "y"} <= aggressive and not {"k_rot", "v"} & none  # KV cache is per request


def test_bucket_cost_follows_the_measured_jit_stall_and_the_shape() -> None:
    costs = bucket_costs(BLOCK, "standard", [256, 512, 1024], max_batch=4, compile_stall_ms=880.0)
    groups = len(fusion_groups(BLOCK, "standard"))
    assert costs.kernels.tolist() == [groups * 4] * 3
    # 880 ms compiles the generic path's 11 kernels: 80 ms per kernel.
    np.testing.assert_allclose(costs.compile_ms, groups * 4 * 80.0)
    np.testing.assert_allclose(costs.binary_bytes, groups * 4 * KERNEL_BINARY_BYTES)
    np.testing.assert_allclose(costs.workspace_bytes / costs.workspace_bytes[0], [1, 2, 4])
    expected = sum(tensor_bytes(BLOCK, t, 4.0, 256.0) for t in boundary_tensors(BLOCK, "standard"))
    assert costs.workspace_bytes[0] == pytest.approx(expected)


def _plan(buckets, tiles=(), fusion="standard", max_batch=4) -> CompiledPlan:
    return CompiledPlan(BLOCK, fusion, tuple(buckets), max_batch, tuple(tiles))


def test_retune_cost_counts_what_must_compile() -> None:
    base = _plan([256, 512])
    assert retune_cost(base, base, 800.0)["compile_ms"] == 0.0
    added = retune_cost(base, _plan([256, 512, 1024]), 800.0)
    assert added["added_buckets"] == [1024] and added["kernels"] == 7 * 4
    assert added["memory_bytes"] > 0
    tile = retune_cost(_plan([256, 512], [("qkv_proj", "a")]), _plan([256, 512]), 800.0)
    assert tile["recompiled_buckets"] == [256, 512] and tile["kernels"] == 2 * 1 * 4
    assert tile["memory_bytes"] == 0.0
    everything = retune_cost(base, base, 800.0, retune_all=True)
    assert everything["kernels"] == 2 * 7 * 4
    widen = retune_cost(base, _plan([256, 1024]), 800.0)
    assert widen["removed_buckets"] == [512] and widen["kernels"] == 7 * 4


@pytest.fixture(scope="module")
def runs(mapping_packet):
    """Baseline, dense-buckets and the baseline again, on one request stream (5,000 requests)."""
    out = {}
    base = build_scenario(mapping_packet, requests=5000)
    stream = generate_requests(base.runtime.workload, base.runtime.service, base.runtime.seed)
    for name in ("baseline", "dense-buckets"):
        s = build_scenario(mapping_packet, None if name == "baseline" else name, requests=5000)
        out[name] = run_figures(s.runtime, s.service_table, stream)
    out["again"] = run_figures(base.runtime, base.service_table, stream)
    return out


def test_runtime_adaptation_gains_for_the_dense_buckets_candidate(runs) -> None:
    won = gain(runs["baseline"], runs["dense-buckets"])
    assert won["p99_ms"] > 0 and won["p95_ms"] > 0
    assert won["capacity_per_s"] > 0 and won["fallback_rate"] > 0.05
    assert runs["dense-buckets"]["fallback_rate"] == 0.0
    assert runs["dense-buckets"]["padding_fraction"] < runs["baseline"]["padding_fraction"]


def test_no_gain_when_nothing_changes(runs) -> None:
    won = gain(runs["baseline"], runs["again"])
    assert all(v == 0.0 for v in won.values())


def test_exact_buckets_without_mixing_pad_nothing(mapping_packet) -> None:
    s = build_scenario(mapping_packet, "dense-buckets", requests=3000)
    policy = dataclasses.replace(s.runtime.batch_policy, bucketing=True)
    s = dataclasses.replace(s, runtime=dataclasses.replace(s.runtime, batch_policy=policy))
    stream = generate_requests(s.runtime.workload, s.runtime.service, s.runtime.seed)
    assert run_figures(s.runtime, s.service_table, stream, capacity=False)["padding_fraction"] == 0


def test_replaying_simulated_telemetry_reproduces_it(mapping_packet) -> None:
    s = build_scenario(mapping_packet, requests=3000)
    rows = simulated_request_rows(simulate(s.runtime, s.service_table))
    mix = observed_mix(rows["seq_len"].to_numpy())
    assert mix.quantum == 1 and set(mix.values.tolist()) <= set(s.runtime.workload.shapes.values)
    stream = replay_stream(rows["arrival_ms"].to_numpy() + 5e3, mix.seq_len, 0)
    replayed = simulate(s.runtime, s.service_table, stream=stream)
    compared = observed_vs_simulated(
        rows["latency_ms"].to_numpy(), replayed, [256, 512, 1024, 2048]
    )
    for p in ("p50", "p95", "p99"):
        assert compared[p]["ratio"] == pytest.approx(1.0, rel=1e-9)
    assert sum(b["requests"] for b in compared["by_bucket"]) == compared["requests"]


def test_many_distinct_lengths_are_rounded_up_to_a_tile_multiple() -> None:
    lengths = np.arange(1, 4001)
    mix = observed_mix(lengths, granule=16)
    assert len(mix.values) <= 256 and mix.quantum % 16 == 0
    assert np.all(mix.seq_len >= lengths) and np.all(mix.seq_len - lengths < mix.quantum)
    assert mix.weights.sum() == pytest.approx(1.0)


def test_screening_ranks_shapes_by_saved_service_time(mapping_packet) -> None:
    s = build_scenario(mapping_packet)
    values = np.asarray(s.service_table.shapes)
    weights = np.full(len(values), 1 / len(values))
    saved = shape_savings(s.service_table, s.all_compiled_table, weights, 4)
    compiled = np.isin(values, [256, 512, 1024, 2048])
    assert np.all(saved[compiled] == 0) and np.all(saved[~compiled] > 0)
    picked = screen(values, saved, ~compiled, keep=2)
    assert picked == sorted(values[np.argsort(-saved)][:2].tolist())


def _action(ident: str, p99: float, compile_ms: float) -> dict:
    return {"id": ident, "gain": {"p99_ms": p99}, "cost": {"compile_ms": compile_ms},
            "gain_per_cost": gain_per_cost(p99, compile_ms)}  # fmt: skip


def test_actions_rank_by_gain_per_cost_with_free_wins_first_and_losses_last() -> None:
    ranked = rank_actions([
        _action("cheap-small", 40.0, 1000.0),   # 40 ms/s
        _action("worse", -10.0, 1000.0),
        _action("dear-big", 100.0, 4000.0),     # 25 ms/s
        _action("free", 5.0, 0.0),
        _action("neutral", 0.0, 500.0),
    ])  # fmt: skip
    assert [a["id"] for a in ranked] == ["free", "cheap-small", "dear-big", "neutral", "worse"]
    assert [a["rank"] for a in ranked] == [1, 2, 3, 4, 5]
    assert [a["recommended"] for a in ranked] == [True, True, True, False, False]
    assert gain_per_cost(5.0, 0.0) is None and gain_per_cost(30.0, 2000.0) == 15.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(-500, 500, allow_nan=False), st.sampled_from([0.0, 500.0, 2000.0, 8000.0])
        ),
        min_size=1,
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_ranking_does_not_depend_on_input_order(pairs, rng) -> None:
    actions = [_action(f"a{i:02d}", gain, cost) for i, (gain, cost) in enumerate(pairs)]
    shuffled = list(actions)
    rng.shuffle(shuffled)
    ranked = rank_actions(actions)
    assert [a["id"] for a in ranked] == [a["id"] for a in rank_actions(shuffled)]
    paid = [
        a["gain_per_cost"] for a in ranked if a["recommended"] and a["gain_per_cost"] is not None
    ]
    assert paid == sorted(paid, reverse=True)
    flags = [a["recommended"] for a in ranked]
    assert flags == sorted(flags, reverse=True)  # every recommended action before the rest
