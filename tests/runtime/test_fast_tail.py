"""The counterfactual re-runs' fast path gives exactly the tail the full re-run gives.

The re-runs behind the Shapley tail attribution are built ahead (`prepare_latency_run`, with
columns, queue plans and equal arrays shared between runs: `SharedInputs`) and read back only
the four order statistics np.percentile interpolates between (`rerun_tail`). None of that may
change an attribution: here every subset of drivers switched off is compared, bit for bit,
with a full `simulate` of the same configuration and np.percentile of its latencies; the
pieces (numpy's percentile arithmetic, the order statistics, the one-pass core imbalance)
against numpy itself.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.runtime.inputs import PLACEMENTS, Fallback, ServiceSpec
from model.runtime.kernel import (
    idle_core_wait,
    idle_timeline,
    measured_order_stats,
    top_order_stats,
    warm_up,
)
from model.runtime.queues import plan_queues, shape_columns
from model.runtime.simulate import SharedInputs, prepare_latency_run, simulate
from model.runtime.stats import (
    describe_ms,
    hbm_oversubscribed_fraction,
    interpolate_percentiles,
    measured,
    percentile_ranks,
    window_ms,
)
from model.runtime.summary import summarize
from model.runtime.tail import (
    DRIVERS,
    counterfactual_attribution,
    idle_core_time,
    imbalance_ms,
    rerun_tail,
    switched_off,
    tail_percentiles,
)
from tests.runtime.helpers import random_table, table_config, with_busy_levels

SHAPES = (64, 128, 256)


def bits(x) -> np.ndarray:
    """The float64 values as integers: equality of these is equality to the last bit."""
    return np.asarray(x, np.float64).view(np.int64)


# Without -0.0: it equals 0.0, so which of the two a sort leaves at a rank is the sort's own
# choice. Latencies never hold it (finish - arrival of non-negative times is +0.0 at least).
finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).map(lambda v: v + 0.0)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(finite, st.sampled_from([0.0, 1.5, 2.0])), min_size=1, max_size=80),
    st.lists(st.floats(0.0, 100.0), min_size=1, max_size=5),
)
def test_percentile_arithmetic_is_numpys_to_the_bit(values, q) -> None:
    """percentile_ranks + interpolate_percentiles on the sorted values == np.percentile, ties,
    one value and q = 0 or 100 included."""
    x = np.asarray(values, np.float64)
    below, above, gamma = percentile_ranks(len(x), q)
    ordered = np.sort(x)
    got = interpolate_percentiles(ordered[below], ordered[above], gamma)
    np.testing.assert_array_equal(bits(got), bits(np.percentile(x, q)))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(finite, st.sampled_from([0.0, 1.5, 2.0])), min_size=1, max_size=300),
    st.booleans(),
)
def test_describe_is_numpys_mean_percentiles_and_max_to_the_bit(values, with_nan) -> None:
    """describe_ms (one partition at the ranks np.percentile reads) == np.mean, np.percentile
    and np.max, ties, one value and NaN (numpy's own rules) included."""
    x = np.asarray(values + ([float("nan")] if with_nan else []), np.float64)
    got = describe_ms(x, with_max=True)
    want = [np.mean(x), *np.percentile(x, [50.0, 95.0, 99.0]), np.max(x)]
    assert bits(list(got.values())).tolist() == bits(want).tolist()
    assert list(got) == ["mean", "p50", "p95", "p99", "max"]


def idle_core_time_numpy(start, finish, cores):
    """The idle-core timeline as numpy defines it (the reference for idle_timeline)."""
    times = np.concatenate([start, finish])
    nb = len(start)
    delta = np.concatenate([np.ones(nb, np.int8), np.full(nb, -1, np.int8)])
    order = np.argsort(times, kind="stable")
    times = times[order]
    busy = np.cumsum(delta[order], dtype=np.int64)
    idle = (busy < cores).astype(np.float64)
    cumulative = np.concatenate([[0.0], np.cumsum(idle[:-1] * np.diff(times))])
    return times, cumulative, idle


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6)), min_size=1, max_size=60),
    st.integers(1, 4),
    st.floats(0.01, 10.0),
)
def test_idle_timeline_is_the_numpy_definition(batches, cores, scale) -> None:
    """One numba pass gives the numpy definition's event times, cumulative idle time and idle
    flags to the bit: ties between starts and finishes, zero-length batches, any core count."""
    start = np.sort(np.array([s for s, _ in batches], np.float64)) * scale
    finish = start + np.array([d for _, d in batches], np.float64) * scale / 3
    times = np.concatenate([start, finish])
    got = idle_timeline(times, np.argsort(times, kind="stable"), len(start), cores)
    for g, w in zip(got, idle_core_time_numpy(start, finish, cores), strict=True):
        np.testing.assert_array_equal(bits(g), bits(w))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(finite, min_size=1, max_size=60),
    st.integers(0, 59),
    st.data(),
)
def test_order_stats_are_the_sorted_latencies(finish, first, data) -> None:
    """measured_order_stats picks finish[batch] - arrival of the measured requests at the asked
    ranks of their ascending order, per-batch and per-request (identity) finish alike."""
    n = len(finish)
    first = min(first, n - 1)
    arrival = np.asarray(data.draw(st.lists(finite, min_size=n, max_size=n)), np.float64)
    batch = np.asarray(data.draw(st.permutations(range(n))), np.int32)
    finish = np.asarray(finish, np.float64)
    ranks = np.unique(data.draw(st.lists(st.integers(0, n - first - 1), min_size=1)))
    for identity, req_batch in ((False, batch), (True, np.zeros(1, np.int32))):
        latency = (finish if identity else finish[batch])[first:] - arrival[first:]
        got = measured_order_stats(finish, req_batch, identity, arrival, first, ranks)
        np.testing.assert_array_equal(bits(got), bits(np.sort(latency)[ranks]))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 6000),
    st.sampled_from(["exponential", "rounded", "ascending", "descending", "constant"]),
    st.floats(0.0, 1.0),
    st.integers(0, 2**32 - 1),
)
def test_top_order_stats_are_exact_above_the_cutoff(m, kind, lowest, seed) -> None:
    """The sampled cut-off path: where it answers, the sorted values at the ranks, exactly,
    ties (rounded, constant) and sorted inputs included; tail ranks of a few thousand values
    (a p95 and p99) are answered by it, not the fallback selection."""
    rng = np.random.default_rng(seed)
    x = {
        "exponential": rng.exponential(size=m),
        "rounded": np.round(rng.exponential(size=m), 1),
        "ascending": np.sort(rng.exponential(size=m)),
        "descending": np.sort(rng.exponential(size=m))[::-1].copy(),
        "constant": np.full(m, 2.5),
    }[kind]
    r0 = int(lowest * (m - 1))
    ranks = np.unique(np.concatenate([[r0], rng.integers(r0, m, 3)])).astype(np.int64)
    got = top_order_stats(x, ranks)
    if len(got):
        np.testing.assert_array_equal(bits(got), bits(np.sort(x)[ranks]))
    below, above, _ = percentile_ranks(m, (95.0, 99.0))
    tail_ranks = np.unique(np.concatenate([below, above]))
    if m >= 2000:
        got = top_order_stats(x, tail_ranks)
        np.testing.assert_array_equal(bits(got), bits(np.sort(x)[tail_ranks]))


@st.composite
def small_runs(draw):
    """A small run with every driver active: per-core placement, a fallback shape with a
    compile stall and (table service) contention for a scarce HBM and busy-core tables."""
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    max_batch = draw(st.integers(1, 3))
    compiled = draw(st.sampled_from([(64,), (64, 128), (128, 256)]))
    table = with_busy_levels(random_table(rng, max_batch, SHAPES, compiled), rng, 2)
    ideal = dataclasses.replace(random_table(rng, max_batch, SHAPES, SHAPES), busy=table.busy)
    cores = draw(st.integers(1, 3))
    load = draw(st.sampled_from([0.4, 0.9, 1.3]))
    cfg = table_config(
        table,
        cores=cores,
        rate_per_s=load * cores * 1000.0 / float(np.mean(table.time_ms)),
        weights=rng.uniform(0.1, 1.0, len(SHAPES)),
        requests=draw(st.integers(2, 400)),
        seed=seed,
        placement=draw(st.sampled_from([p for p in PLACEMENTS if p != "central-queue"])),
        max_batch=max_batch,
        max_queue_delay_ms=draw(st.sampled_from([0.0, 0.3, 2.0])),
        bucketing=draw(st.booleans()),
        stall_ms=draw(st.sampled_from([0.0, 3.0])),
        hbm_gbs=draw(st.sampled_from([0.5, 200.0])),
        warmup_fraction=draw(st.sampled_from([0.0, 0.1, 0.5])),
    )
    if draw(st.booleans()):  # pinned service: the FIFO path where it applies
        cfg = dataclasses.replace(
            cfg,
            service=ServiceSpec("distribution", "exponential", 1.0),
            compiled_shapes=compiled,
            fallback=Fallback(cfg.fallback.compile_stall_ms, dispatch_overhead_us=80.0),
        )
        table = ideal = None
    return cfg, table, draw(st.sampled_from([ideal, None]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_runs())
def test_fast_reruns_give_the_full_reruns_tail(run) -> None:
    """Every subset of drivers off, built together as the summary builds them: the fast tail
    equals np.percentile of a full simulation of that configuration, to the bit."""
    cfg, table, ideal = run
    base = simulate(cfg, table, all_compiled_table=ideal)
    first = base.first_measured
    shared = SharedInputs()
    for size in range(len(DRIVERS) + 1):
        for off in itertools.combinations(DRIVERS, size):
            c, tab = switched_off(cfg, table, ideal, frozenset(off))
            fast = rerun_tail(prepare_latency_run(c, tab, base.stream, shared=shared), first)
            alone = rerun_tail(prepare_latency_run(c, tab, base.stream), first)
            full = simulate(c, tab, stream=base.stream)
            latency = (full.requests.finish_ms - full.requests.arrival_ms)[measured(full)]
            assert bits(fast).tolist() == bits(tail_percentiles(latency)).tolist(), off
            assert bits(alone).tolist() == bits(fast).tolist(), off


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_runs())
def test_columns_and_plans_do_not_read_contention(run) -> None:
    """SharedInputs reuses a run's columns and queue plan for a run differing only in
    `contention`: that holds only while shape_columns and plan_queues never read it."""
    cfg, table, _ = run
    stream = simulate(cfg, table).stream
    tab = None if cfg.service.source == "distribution" else table
    plans = []
    for contention in (True, False):
        c = dataclasses.replace(cfg, contention=contention)
        columns = shape_columns(c, tab)
        plans.append((columns, plan_queues(c, columns, stream)))
    for x, y in zip(*plans, strict=True):
        for field in dataclasses.fields(x):
            np.testing.assert_array_equal(getattr(x, field.name), getattr(y, field.name))


def imbalance_numpy(result, first: int) -> np.ndarray:
    """Core-imbalance wait as numpy defines it (the reference for idle_core_wait)."""
    times, cumulative, idle = idle_core_time(result)

    def idle_until(x):
        i = np.maximum(np.searchsorted(times, x, side="right") - 1, 0)
        return np.maximum(x - times[i], 0.0) * idle[i] + cumulative[i]

    req, b, sel = result.requests, result.batches, slice(first, None)
    arrival = req.arrival_ms[sel]
    start = req.of_batch(b.start_ms, sel)
    wait = start - arrival
    batching = np.minimum(np.maximum(req.of_batch(b.ready_ms, sel) - arrival, 0.0), wait)
    waited = idle_until(start) - idle_until(arrival + batching)
    return np.clip(waited, 0.0, wait - batching)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_runs())
def test_imbalance_is_the_numpy_definition(run) -> None:
    """The one-pass core-imbalance wait (galloping look-ups from the previous request's
    answers) equals the numpy definition with np.searchsorted, bit for bit, for every
    placement with per-core queues, batching and the single-request FIFO path."""
    cfg, table, ideal = run
    result = simulate(cfg, table, all_compiled_table=ideal)
    for first in (0, result.first_measured):
        got = imbalance_ms(result, first)
        np.testing.assert_array_equal(bits(got), bits(imbalance_numpy(result, first)))


def oversubscribed_numpy(result) -> float | None:
    """The oversubscribed share of the window over every interval of the HBM timeline (the
    reference for hbm_oversubscribed_fraction, which measures only the oversubscribed ones)."""
    if result.pinned:
        return None
    t0, t1 = window_ms(result)
    if t1 <= t0:
        return 0.0
    h = result.hbm
    ends = np.append(h.time_ms[1:], max(t1, float(h.time_ms[-1])))
    inside = np.clip(np.minimum(ends, t1) - np.maximum(h.time_ms, t0), 0.0, None)
    return float(np.sum(inside[h.demand_gbs > h.capacity_gbs]) / (t1 - t0))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_runs())
def test_oversubscribed_fraction_is_the_numpy_definition(run) -> None:
    cfg, table, ideal = run
    result = simulate(cfg, table, all_compiled_table=ideal)
    got, want = hbm_oversubscribed_fraction(result), oversubscribed_numpy(result)
    assert got == want and (got is None or bits(got) == bits(want))


def test_shared_inputs_hold_one_copy_of_equal_arrays() -> None:
    """Built together, the re-runs of one run hold one shape-column array between them, and a
    run differing only in contention reuses the plan of the one built before."""
    rng = np.random.default_rng(3)
    table = random_table(rng, 2, SHAPES, (64,))
    cfg = table_config(table, cores=2, rate_per_s=900.0, weights=(1, 1, 1), requests=500,
                       seed=2, placement="least-loaded", max_batch=2, stall_ms=2.0)  # fmt: skip
    stream = simulate(cfg, table).stream
    shared = SharedInputs()
    runs = [
        prepare_latency_run(*switched_off(cfg, table, None, frozenset(off)), stream, shared=shared)
        for off in ((), ("contention",), ("placement",), ("fallback", "contention"))
    ]
    assert len(shared.plans) == 3  # the contention-off run reused the first plan
    req_col = {id(r.args[1]) for r in runs}  # simulate_kernel's second argument
    assert len(req_col) == 1


def test_large_runs_build_their_reruns_one_at_a_time(monkeypatch) -> None:
    """Above CONCURRENT_MAX_REQUESTS the re-runs are built in the pool when their turn comes;
    the attribution is the same as the overlapping path's (limit lowered to reach it)."""
    import model.runtime.tail as tail

    rng = np.random.default_rng(4)
    table = with_busy_levels(random_table(rng, 2, SHAPES, (64,)), rng, 1)
    cfg = table_config(table, cores=2, rate_per_s=1500.0, weights=(1, 1, 1), requests=800,
                       seed=5, placement="round-robin", max_batch=2, stall_ms=2.0,
                       hbm_gbs=0.5)  # fmt: skip
    result = simulate(cfg, table)
    small = counterfactual_attribution(result, table)
    monkeypatch.setattr(tail, "CONCURRENT_MAX_REQUESTS", 100)
    large = counterfactual_attribution(result, table)
    assert small["runs"] == 8
    assert large == small


def test_the_caller_runs_the_reruns_the_pool_has_not_started() -> None:
    """With the pool's only thread held up, the caller runs every re-run itself (each future
    cancelled unstarted); with it free they split the queue: the attribution is the same."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from model.runtime.stats import measured_latency_ms
    from model.runtime.tail import finish_counterfactuals, start_counterfactuals

    rng = np.random.default_rng(7)
    table = with_busy_levels(random_table(rng, 2, SHAPES, (64,)), rng, 1)
    cfg = table_config(table, cores=2, rate_per_s=1500.0, weights=(1, 1, 1), requests=900,
                       seed=8, placement="least-loaded", max_batch=2, stall_ms=2.0,
                       hbm_gbs=0.5)  # fmt: skip
    result = simulate(cfg, table)
    base = tail_percentiles(measured_latency_ms(result))
    held = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        pool.submit(held.wait, 30)
        pending = start_counterfactuals(result, table, None, pool)
        by_caller = finish_counterfactuals(pending, base, pinned=False, all_compiled_table=None)
        assert len(pending.futures) == 7 and all(f.cancelled() for f in pending.futures)
        held.set()
    assert by_caller == counterfactual_attribution(result, table)


def test_warm_up_compiles_the_tail_kernels_once() -> None:
    """The order-statistics and core-imbalance kernels: warm_up compiles the signatures runs
    use (else a run's summary would wait on a numba compile)."""
    warm_up()
    rng = np.random.default_rng(6)
    table = random_table(rng, 2, SHAPES, (64,))
    for placement, pinned in itertools.product(PLACEMENTS, (False, True)):
        cfg = table_config(table, cores=2, rate_per_s=1500.0, weights=(1, 1, 1), requests=200,
                           seed=1, placement=placement, max_batch=1 if pinned else 2)  # fmt: skip
        if pinned:
            cfg = dataclasses.replace(cfg, service=ServiceSpec("distribution", "exponential", 1.0))
        result = simulate(cfg, None if pinned else table)
        summarize(result, None if pinned else table)
    assert len(measured_order_stats.signatures) == 1, measured_order_stats.signatures
    assert len(idle_core_wait.signatures) == 1, idle_core_wait.signatures
    assert len(idle_timeline.signatures) == 1, idle_timeline.signatures
