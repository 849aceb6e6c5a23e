"""Shared-HBM contention: hand-checked fluid sharing and invariants on random runs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.runtime.simulate import simulate
from model.runtime.tables import service_table_from_arrays
from model.runtime.workload import generate_requests
from tests.runtime.helpers import random_table, table_config, with_busy_levels
from tests.runtime.laws import check_laws

SHAPES = (64, 128, 256)


def _two_phase_table(memory_ms: float, gbs: float, fixed_ms: float = 0.0):
    """One shape, batch size 1: fixed_ms of launch then memory_ms moving gbs GB/s."""
    return service_table_from_arrays(
        [1], [64], [[fixed_ms]], [[0.0]], [[memory_ms]], [[memory_ms * gbs * 1e6]]
    )


def _run_with_arrivals(
    table, arrivals_ms, *, cores: int, hbm_gbs: float, contention=True, seq_len=None
):
    cfg = table_config(
        table,
        cores=cores,
        rate_per_s=1.0,
        weights=(1.0,) * len(table.shapes),
        requests=len(arrivals_ms),
        seed=0,
        hbm_gbs=hbm_gbs,
        contention=contention,
        warmup_fraction=0.0,
    )
    stream = generate_requests(cfg.workload, cfg.service, cfg.seed)
    stream = dataclasses.replace(stream, arrival_ms=np.asarray(arrivals_ms, dtype=float))
    if seq_len is not None:
        stream = dataclasses.replace(stream, seq_len=np.asarray(seq_len, dtype=np.int64))
    return simulate(cfg, table, stream=stream)


def test_two_overlapping_bursts_share_bandwidth_by_hand() -> None:
    """Each batch moves 1 ms x 1000 GB/s on a 1000 GB/s device. The second starts at 0.5 ms:
    the first runs alone 0.5 ms, both then run at half rate until the first ends at 1.5 ms,
    and the second finishes its last 0.5 ms alone at 2.0 ms."""
    result = _run_with_arrivals(_two_phase_table(1.0, 1000.0), [0.0, 0.5], cores=2, hbm_gbs=1000.0)
    assert result.requests.finish_ms == pytest.approx([1.5, 2.0], abs=1e-12)
    assert result.batches.stretch_ms == pytest.approx([0.5, 0.5], abs=1e-12)
    assert result.hbm.demand_gbs.max() == pytest.approx(2000.0)


def test_fixed_phase_does_not_stretch() -> None:
    """Launch/compute time never stretches: two batches of 1 ms launch + 1 ms memory at the
    device's full rate, started together, stretch only their memory phase (to 2 ms)."""
    table = _two_phase_table(1.0, 1000.0, fixed_ms=1.0)
    result = _run_with_arrivals(table, [0.0, 0.0], cores=2, hbm_gbs=1000.0)
    assert result.requests.finish_ms == pytest.approx([3.0, 3.0], abs=1e-12)


def test_a_compute_bound_phase_keeps_the_bandwidth_it_needs() -> None:
    """Max-min sharing of 1,000 GB/s: a memory-bound phase asks 1,000 GB/s for 1 ms, a
    compute-bound one 200 GB/s for 1 ms (its weights streamed under its arithmetic). The fair
    level is 800 GB/s: the compute phase keeps its 200 and ends on time at 1.0 ms; the memory
    phase runs at 0.8 until then and finishes its last 0.2 ms alone, at 1.2 ms. Proportional
    sharing would have slowed both to 1/1.2 of their speed."""
    shapes = [64, 128]
    table = service_table_from_arrays(
        [1], shapes, [[0.0, 0.0]], [[0.0, 1.0]], [[1.0, 0.0]], [[1e9, 0.0]],
        hbm_bytes=[[1e9, 2e8]], compiled_shapes=shapes,
    )  # fmt: skip
    cfg_shapes = {"cores": 2, "hbm_gbs": 1000.0, "seq_len": [64, 128]}
    result = _run_with_arrivals(table, [0.0, 0.0], **cfg_shapes)
    assert result.requests.finish_ms == pytest.approx([1.2, 1.0], abs=1e-12)
    assert result.batches.stretch_ms == pytest.approx([0.2, 0.0], abs=1e-12)
    assert result.hbm.demand_gbs.max() == pytest.approx(1200.0)
    # compute-bound bytes alone below the bandwidth: no stretch at all
    alone = _run_with_arrivals(table, [0.0, 5.0], **cfg_shapes)
    assert alone.requests.finish_ms == pytest.approx([1.0, 6.0], abs=1e-12)


@st.composite
def loaded_runs(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    max_batch = draw(st.integers(1, 4))
    table = random_table(rng, max_batch, SHAPES, draw(st.sampled_from([None, (128,)])))
    cores = draw(st.integers(2, 6))
    if draw(st.booleans()):  # compute-bound kernels stream bytes too (they contend)
        extra = table.compute_bound_ms * rng.uniform(50e6, 300e6)  # bytes: 50-300 GB/s
        table = dataclasses.replace(table, hbm_bytes=table.memory_bound_bytes + extra)
    if draw(st.booleans()):  # busy-core levels: a smaller cache share moves more bytes
        table = with_busy_levels(table, rng, draw(st.integers(1, cores - 1)))
    mean_service = float(np.mean(table.time_ms))
    cfg = table_config(
        table,
        cores=cores,
        rate_per_s=draw(st.sampled_from([0.5, 0.9, 1.2])) * cores * 1000.0 / mean_service,
        weights=rng.uniform(0.1, 1.0, len(SHAPES)),
        requests=draw(st.integers(20, 300)),
        seed=seed,
        placement=draw(st.sampled_from(["central-queue", "round-robin", "random"])),
        max_batch=max_batch,
        max_queue_delay_ms=draw(st.sampled_from([0.0, 0.3])),
        bucketing=draw(st.booleans()),
        hbm_gbs=draw(st.sampled_from([150.0, 400.0, 1000.0])),
        stall_ms=draw(st.sampled_from([0.0, 3.0])),
    )
    return cfg, table


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaded_runs())
def test_contention_invariants(run) -> None:
    cfg, table = run
    result = simulate(cfg, table)
    check_laws(result)
    b, h = result.batches, result.hbm
    # Never faster than alone: the memory phase lasts at least its unstretched time.
    assert np.all(b.finish_ms - b.memory_start_ms >= b.memory_ms * (1 - 1e-12) - 1e-12)
    # Bytes conserved: served traffic min(demand, bandwidth) integrated over time equals the
    # bytes every memory phase had to move (GB/s x ms x 1e6 = bytes).
    end = max(float(h.time_ms[-1]), float(np.max(b.finish_ms)))
    spans = np.diff(np.append(h.time_ms, end))
    served = float(np.sum(np.minimum(h.demand_gbs, h.capacity_gbs) * spans)) * 1e6
    moved = float(np.sum(b.memory_bound_bytes[b.memory_ms + b.shared_cache_ms > 0]))
    moved += float(np.sum((b.hbm_bytes - b.memory_bound_bytes)[b.compute_ms > 0]))
    assert served == pytest.approx(moved, rel=1e-9)
    # Demand drops back to zero once everything finished.
    assert h.demand_gbs[-1] == pytest.approx(0.0, abs=1e-6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaded_runs())
def test_contention_never_makes_single_request_fifo_faster(run) -> None:
    """With max_batch 1 and fixed or pooled FIFO dispatch, longer service can only delay every
    later start (the multi-server FIFO recursion is monotone), so each request finishes no
    earlier with contention than without."""
    cfg, table = run
    cfg = dataclasses.replace(cfg, batch_policy=dataclasses.replace(cfg.batch_policy, max_batch=1))
    with_c = simulate(cfg, table).requests.finish_ms
    without = simulate(dataclasses.replace(cfg, contention=False), table).requests.finish_ms
    assert np.all(with_c >= without - 1e-9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaded_runs())
def test_demand_below_bandwidth_changes_nothing(run) -> None:
    """If every core's bursts (compute- and memory-bound) together fit in the bandwidth, and
    the plan does not depend on the shared cache (no busy levels), contention is off."""
    cfg, table = run
    table = dataclasses.replace(table, busy=())
    burst = np.max(table.memory_bound_bytes / table.memory_bound_ms) / 1e6  # GB/s
    compute_bytes = table.hbm_bytes - table.memory_bound_bytes
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(table.compute_bound_ms > 0, compute_bytes / table.compute_bound_ms, 0.0)
    burst = max(burst, float(np.max(rate)) / 1e6)
    # (a hair above the sum, so float rounding of the summed demand cannot cross it)
    roomy = dataclasses.replace(cfg.hardware, hbm_gbs=float(burst * cfg.hardware.cores) * 1.000001)
    on = simulate(dataclasses.replace(cfg, hardware=roomy), table)
    off = simulate(dataclasses.replace(cfg, hardware=roomy, contention=False), table)
    if np.all(compute_bytes == 0):  # the same phases: the same floating-point sums
        np.testing.assert_array_equal(on.requests.finish_ms, off.requests.finish_ms)
    else:  # a compute phase of its own: (t + launch) + compute, not t + (launch + compute)
        np.testing.assert_allclose(on.requests.finish_ms, off.requests.finish_ms, rtol=1e-12)
    assert np.all(on.batches.stretch_ms == 0.0)


def test_a_batch_runs_at_the_level_of_the_cores_busy_at_its_dispatch() -> None:
    """Alone a batch takes 1 ms of memory-bound time; with 2 cores busy the plan moves twice
    the bytes (its re-reads miss the shared cache) and takes 2 ms. HBM is ample, so only the
    level matters: the batch at 0 ms runs alone (ends 1.0), the one at 0.5 ms finds a core busy
    (ends 2.5) and books the extra 1 ms as shared-cache time. Contention off: both alone."""
    alone = _two_phase_table(1.0, 1.0)
    table = dataclasses.replace(alone, busy=(_two_phase_table(2.0, 1.0),))
    result = _run_with_arrivals(table, [0.0, 0.5], cores=2, hbm_gbs=1e6)
    assert result.requests.finish_ms == pytest.approx([1.0, 2.5], abs=1e-12)
    assert result.batches.busy_cores.tolist() == [1, 2]
    assert result.batches.shared_cache_ms == pytest.approx([0.0, 1.0], abs=1e-12)
    assert result.batches.memory_bound_bytes == pytest.approx([1e6, 2e6])
    off = _run_with_arrivals(table, [0.0, 0.5], cores=2, hbm_gbs=1e6, contention=False)
    assert off.requests.finish_ms == pytest.approx([1.0, 1.5], abs=1e-12)
    assert off.batches.busy_cores.tolist() == [1, 1]
    # more busy cores than levels computed: the last level holds
    three = _run_with_arrivals(table, [0.0, 0.1, 0.2], cores=3, hbm_gbs=1e6)
    assert three.batches.busy_cores.tolist() == [1, 2, 2]
