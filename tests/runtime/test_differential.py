"""Differential test: the numba runtime against the SimPy reference on random small runs.

Batching (timer and full), bucketing, all five placements, padding, fallback with compile
stalls, both service sources; no HBM contention (contention has its own invariants). Start and
finish times must be identical, bit for bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.runtime.inputs import PLACEMENTS, Fallback, ServiceSpec, ShapeMix
from model.runtime.queues import plan_queues, shape_columns
from model.runtime.simulate import simulate, simulate_latency_ms
from model.runtime.workload import generate_requests
from tests.runtime.helpers import pinned_config, random_table, table_config
from tests.runtime.reference import reference_run

SHAPES = (64, 128, 256, 512)


@st.composite
def small_runs(draw):
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    max_batch = draw(st.integers(1, 4))
    compiled = draw(st.sampled_from([None, (128,), (64, 256), (512,)]))
    table = random_table(rng, max_batch, SHAPES, compiled)
    cores = draw(st.integers(1, 4))
    mean_service = float(np.mean(table.time_ms))
    load = draw(st.sampled_from([0.3, 0.8, 1.3]))  # offered load per core, overload included
    cfg = table_config(
        table,
        cores=cores,
        rate_per_s=load * cores * 1000.0 / mean_service,
        weights=rng.uniform(0.1, 1.0, len(SHAPES)),
        requests=draw(st.integers(1, 60)),
        seed=seed,
        placement=draw(st.sampled_from(PLACEMENTS)),
        max_batch=max_batch,
        max_queue_delay_ms=draw(st.sampled_from([0.0, 0.05, 0.4, 2.0])),
        bucketing=draw(st.booleans()),
        stall_ms=draw(st.sampled_from([0.0, 0.7, 5.0, 30.0])),
        contention=False,
    )
    if draw(st.booleans()):
        dist = draw(st.sampled_from(["exponential", "deterministic", "lognormal"]))
        cfg = dataclasses.replace(
            cfg,
            service=ServiceSpec("distribution", dist, mean_service, 0.7),
            compiled_shapes=compiled,
            fallback=Fallback(cfg.fallback.compile_stall_ms, dispatch_overhead_us=150.0),
        )
        table = None
    return cfg, table


def _compare(cfg, table) -> None:
    stream = generate_requests(cfg.workload, cfg.service, cfg.seed)
    plan = plan_queues(cfg, shape_columns(cfg, table), stream)
    ref = reference_run(cfg, table, stream, plan, shape_columns(cfg, table))
    got = simulate(cfg, table, stream=stream).requests
    np.testing.assert_array_equal(got.start_ms, ref["start"])
    np.testing.assert_array_equal(got.finish_ms, ref["finish"])
    np.testing.assert_array_equal(got.core, ref["core"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_runs())
def test_kernel_matches_simpy_reference(run) -> None:
    cfg, table = run
    _compare(cfg, table)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_runs())
def test_contention_below_bandwidth_is_no_contention(run) -> None:
    """With contention on but bandwidth far above any demand, runs equal the reference."""
    cfg, table = run
    cfg = dataclasses.replace(
        cfg, contention=True, hardware=dataclasses.replace(cfg.hardware, hbm_gbs=1e9)
    )
    _compare(cfg, table)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_runs(), st.integers(1, 600), st.booleans())
def test_latency_only_runs_equal_the_full_simulation(run, requests, contention) -> None:
    """The counterfactuals' latency-only runs: with contention off the kernel folds each
    batch's memory phase into its fixed phase (model.runtime.kernel), one event fewer per
    batch; latencies must still equal the full simulation's bit for bit, contention on or off,
    including simultaneous events (the pinned and batched runs here tie often)."""
    cfg, table = run
    cfg = dataclasses.replace(
        cfg,
        contention=contention,
        workload=dataclasses.replace(cfg.workload, requests=requests),
        hardware=dataclasses.replace(cfg.hardware, hbm_gbs=0.5),  # contended when on
    )
    full = simulate(cfg, table)
    lean = simulate_latency_ms(cfg, table, full.stream)
    np.testing.assert_array_equal(lean, full.requests.finish_ms - full.requests.arrival_ms)


def test_batching_timer_and_full_batch_by_hand() -> None:
    """Hand-checked Triton semantics: one core, max_batch 2, timer 1 ms."""
    rng = np.random.default_rng(0)
    table = random_table(rng, 2, (64,))
    cfg = table_config(
        table,
        cores=1,
        rate_per_s=1.0,
        weights=(1.0,),
        requests=5,
        seed=0,
        max_batch=2,
        max_queue_delay_ms=1.0,
        contention=False,
    )
    arrivals = np.array([0.0, 0.5, 3.0, 20.0, 20.2])
    stream = dataclasses.replace(
        generate_requests(cfg.workload, cfg.service, cfg.seed), arrival_ms=arrivals
    )
    req = simulate(cfg, table, stream=stream).requests
    t2 = float(table.time_ms[1, 0])
    t1 = float(table.time_ms[0, 0])
    # 0 and 0.5 fill a batch at 0.5; 3.0 waits its 1 ms timer (core free by then if t2 < 3.5)
    assert req.start_ms[0] == req.start_ms[1] == 0.5
    assert req.start_ms[2] == max(4.0, 0.5 + t2)
    assert req.batch[3] == req.batch[4] and req.start_ms[3] == max(20.2, req.finish_ms[2])
    assert req.finish_ms[2] - req.start_ms[2] == pytest.approx(t1, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    cores=st.integers(1, 8),
    placement=st.sampled_from(["central-queue", "round-robin", "random"]),
    dist=st.sampled_from(["exponential", "deterministic", "lognormal"]),
    load=st.floats(0.2, 1.2),
    compiled=st.sampled_from([None, (128,)]),
)
def test_fifo_path_equals_the_event_loop(seed, cores, placement, dist, load, compiled) -> None:
    """Single-request pinned runs take the one-pass FIFO loop: same results as the event loop."""
    cfg = dataclasses.replace(
        pinned_config(
            cores=cores, rate_per_s=load * cores * 1000.0, dist=dist, cv=0.8,
            placement=placement, requests=500, seed=seed,
        ),
        workload=dataclasses.replace(
            pinned_config(cores=1, rate_per_s=load * cores * 1000.0, requests=500).workload,
            shapes=ShapeMix((64, 512), (0.7, 0.3)),
        ),
        compiled_shapes=compiled,
        fallback=Fallback(dispatch_overhead_us=300.0),
    )  # fmt: skip
    fast, slow = simulate(cfg), simulate(cfg, allow_fifo=False)
    for name in ("start_ms", "finish_ms", "core", "fallback"):
        np.testing.assert_array_equal(getattr(fast.requests, name), getattr(slow.requests, name))


def test_kernels_stay_in_bounds(tmp_path) -> None:
    """numba does not bounds-check by default: an out-of-range read returns garbage silently.
    Run every placement, bucketing and both service sources (the pinned ones without compile
    stalls, so single-request runs take the FIFO loop) with bounds checks compiled in."""
    import os
    import subprocess
    import sys

    code = """
import dataclasses, itertools
import numpy as np
from model.runtime.simulate import simulate, simulate_latency_ms
from model.runtime.inputs import PLACEMENTS, Fallback, ServiceSpec
from tests.runtime.helpers import random_table, table_config
table = random_table(np.random.default_rng(1), 3, (64, 128, 256), (128,))
for placement, bucketing, pinned in itertools.product(PLACEMENTS, (False, True), (False, True)):
    for max_batch in (1, 3):
        cfg = table_config(table, cores=3, rate_per_s=3000.0, weights=(1, 1, 1), requests=300,
                           seed=2, placement=placement, max_batch=max_batch,
                           max_queue_delay_ms=0.2, bucketing=bucketing, stall_ms=2.0,
                           hbm_gbs=300.0)
        if pinned:
            cfg = dataclasses.replace(cfg, service=ServiceSpec("distribution", "exponential", 1.0),
                                      compiled_shapes=(128,), fallback=Fallback(0.0, 100.0))
        full = simulate(cfg, None if pinned else table)
        lean = dataclasses.replace(cfg, contention=False)  # the folded latency-only loop
        simulate_latency_ms(lean, None if pinned else table, full.stream)
"""
    env = {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(tmp_path)}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
