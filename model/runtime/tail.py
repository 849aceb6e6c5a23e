"""Tail attribution, both ways (never by adding per-component percentiles).

(a) Composition: every request's latency split into additive parts (batching wait, queueing,
    core imbalance, fallback, contention, launch, compute, memory), averaged over the slowest
    1% (and 5%) of measured requests.
(b) Counterfactuals: the run repeated with the same random draws and each driver switched off
    (pooled central-queue placement, no fallback, no contention for HBM or the shared cache:
    every batch as if alone); the change in p99 is
    split exactly over the drivers with Shapley values.
Times in ms.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from model.runtime.inputs import Fallback, RuntimeConfig
from model.runtime.queues import request_columns, shape_columns
from model.runtime.simulate import (
    LatencyRun,
    RuntimeResult,
    SharedInputs,
    prepare_latency_run,
)
from model.runtime.stats import (
    interpolate_percentiles,
    measured,
    measured_latency_ms,
    measured_wait_ms,
    percentile_ranks,
)
from model.runtime.workload import RequestStream
from model.service import ServiceTable

COMPONENTS = (
    "batching",
    "queueing",
    "imbalance",
    "fallback",
    "contention",
    "launch",
    "compute",
    "memory",
)
DRIVERS = ("placement", "fallback", "contention")
# Threads running counterfactual re-runs at once: the machines this runs on have 2 cores, and
# each run in flight holds its own per-request arrays (model/runtime/README.md "Memory"). Up to
# CONCURRENT_MAX_REQUESTS requests that is one pool thread and the caller, which runs re-runs
# from the back of the queue once its own statistics are done (`finish_counterfactuals`): two
# threads on two cores, where two pool threads beside the caller's statistics made three,
# time-sliced, evicting each other's caches (an in-process A/B of mapping-dynamic-shapes'
# summary, 60 each at load 1.3, 2026-12-01: 19.0 against 20.2 ms CPU, the same wall time).
COUNTERFACTUAL_WORKERS = 2
# Above this many requests the re-runs go one at a time: a second one in flight adds ~70 bytes
# per request to the peak (measured by tests/runtime/test_memory.py at 2M requests: 322 bytes
# per request against the 276 the 10M-request cap's 3 GB budget allows), so runs that large
# keep the memory budget and small ones, whose summary time is what a user waits on, overlap.
CONCURRENT_MAX_REQUESTS = 1_000_000


TAIL_PERCENTILES = (95.0, 99.0)


def tail_percentiles(latency_ms: np.ndarray) -> tuple[float, float]:
    """(p95, p99) of latencies in ms, one np.percentile pass (linear interpolation)."""
    p95, p99 = np.percentile(latency_ms, list(TAIL_PERCENTILES))
    return float(p95), float(p99)


@dataclass(frozen=True)
class TailRanks:
    """What np.percentile reads for p95 and p99 of n values (`stats.percentile_ranks`).

    Attributes:
        ranks: (R,) int64 unique ascending 0-based ranks of the order statistics it reads.
        below, above: (2,) int64 positions in `ranks` of each percentile's two neighbours.
        gamma: (2,) float64 weight of the upper neighbour.
    """

    ranks: np.ndarray
    below: np.ndarray
    above: np.ndarray
    gamma: np.ndarray


@functools.lru_cache(maxsize=64)
def tail_ranks(n: int) -> TailRanks:
    """The TailRanks of n measured latencies (n >= 1): a pure function of n, kept for the next
    summary of the same size (its dozen small numpy calls were 0.1 ms before the first re-run
    could start). Shared between callers: read them, never write them (read-only flags would
    give the kernels another numba signature to compile)."""
    if n <= 0:
        raise ValueError("no measured requests: lower inputs.workload.warmup_fraction")
    below, above, gamma = percentile_ranks(n, TAIL_PERCENTILES)
    ranks = np.unique(np.concatenate([below, above]))
    return TailRanks(ranks, np.searchsorted(ranks, below), np.searchsorted(ranks, above), gamma)


def rerun_tail(run: LatencyRun, first: int, ranks: TailRanks | None = None) -> tuple[float, float]:
    """(p95, p99) of a built re-run's latencies from request `first` on, ms: the bits
    `tail_percentiles` gives on them (np.percentile's ranks and interpolation, from the four
    order statistics it reads), with no per-request array kept or sorted. `ranks`: the
    `tail_ranks` of its measured count when the caller has them (every re-run of a run
    shares them)."""
    if ranks is None:
        ranks = tail_ranks(len(run.arrival_ms) - first)
    values = run.order_stats(first, ranks.ranks)
    p95, p99 = interpolate_percentiles(values[ranks.below], values[ranks.above], ranks.gamma)
    return float(p95), float(p99)


def idle_core_time(result: RuntimeResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where at least one core is idle: (event times, cumulative idle-time at them, idle flag
    from each time on). A pooled queue would have used such a core at once.

    The events are the batch starts and finishes in stable time order; busy cores after each =
    cumulative sum of +1 a start, -1 a finish (exact); idle = busy < cores (1.0 or 0.0);
    cumulative = 0, then np.cumsum(idle[:-1] * np.diff(times)). One numba pass after the sort
    (`model.runtime.kernel.idle_timeline`, the same bits; tests/runtime/test_fast_tail.py).
    """
    from model.runtime.kernel import idle_timeline  # numba loads only here

    b = result.batches
    times = np.concatenate([b.start_ms, b.finish_ms])
    order = np.argsort(times, kind="stable")
    return idle_timeline(times, order, len(b.start_ms), int(result.config.hardware.cores))


def imbalance_ms(result: RuntimeResult, first: int = 0) -> np.ndarray | None:
    """Time each request from `first` on spent waiting for a core while another core was
    idle, ms; None for central-queue, where it is 0 by construction (every queue is served by
    every core). Per request: wait = start - arrival, batching = min(max(ready - arrival, 0),
    wait), waited = idle-core time until start - idle-core time until arrival + batching,
    clipped to [0, wait - batching] (the wait for a core: the upper bound), in one numba pass
    over the requests that keeps no per-request array but its result
    (`model.runtime.kernel.idle_core_wait`; tests/runtime/test_fast_tail.py checks it against
    this definition in numpy, bit for bit)."""
    from model.runtime.kernel import idle_core_wait  # numba loads only here

    if result.config.placement == "central-queue":
        return None
    req, b = result.requests, result.batches
    times, cumulative, idle = idle_core_time(result)
    return idle_core_wait(
        times, cumulative, idle, req.arrival_ms, b.start_ms, b.ready_ms,
        req.batch, req.identity, int(first),
    )  # fmt: skip


def batch_parts(result: RuntimeResult) -> dict[str, np.ndarray]:
    """Per-batch latency parts shared by a batch's requests, ms: fallback (compile stall +
    generic-path extra), contention (HBM stretch plus the extra time of a smaller shared-cache
    share when other cores were busy), launch, compute, memory (the core alone), and spill
    (the share of memory + contention due to SRAM spill traffic, by bytes)."""
    b = result.batches
    if result.pinned:  # no traffic: no spill (and no work spent finding that out)
        spill = np.zeros(len(b.start_ms))
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(b.hbm_bytes > 0, np.minimum(1.0, b.spill_bytes / b.hbm_bytes), 0.0)
        spill = (b.memory_ms + b.stretch_ms + b.shared_cache_ms) * share
    return {
        "fallback": b.stall_ms + b.fallback_extra_ms,
        "contention": b.stretch_ms + b.shared_cache_ms,
        "launch": b.launch_ms,
        "compute": b.compute_ms,
        "memory": b.memory_ms,
        "spill": spill,
    }


def latency_components(result: RuntimeResult) -> dict[str, np.ndarray]:
    """Per-request additive parts of latency, ms; they sum to finish - arrival.

    queue wait = batching (until the batch was ready) + imbalance (waiting for a core while
    another core was idle) + queueing (the rest: all cores busy). Service = fallback +
    contention + launch + compute + memory (see batch_parts). Also returns `spill`, a share of
    memory + contention, not an extra term.
    """
    req = result.requests
    imbalance = imbalance_ms(result)
    if imbalance is None:
        imbalance = np.zeros(len(req.arrival_ms))
    parts = {
        "batching": req.batching_wait_ms,
        "queueing": req.queue_wait_ms - req.batching_wait_ms - imbalance,
        "imbalance": imbalance,
    }
    parts.update({k: v[req.batch] for k, v in batch_parts(result).items()})
    return parts


def compositions(
    result: RuntimeResult,
    fractions=(0.01, 0.05),
    *,
    latency_ms: np.ndarray | None = None,
    waits_ms: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[dict[str, float]]:
    """Mean latency parts (ms) over the slowest `fractions` of measured requests, then over all
    measured requests: one dict per group with its `requests` and mean `latency`.

    Same definitions as latency_components, computed group by group without building every
    per-request part (a million-request run stays fast and small). `latency_ms`, `waits_ms`:
    `measured_latency_ms` and `measured_wait_ms` when the caller has them already.
    """
    req = result.requests
    m = measured(result)
    latency = measured_latency_ms(result) if latency_ms is None else latency_ms
    n = len(latency)
    k_max = max(1, math.ceil(max(fractions) * n))
    widest = np.argpartition(latency, n - k_max)[n - k_max :]
    order = widest[np.argsort(latency[widest], kind="stable")[::-1]]  # slowest first
    groups = [order[: max(1, math.ceil(f * n))] for f in fractions]
    batch_of = req.batch[m]
    per_batch_count = np.bincount(batch_of, minlength=len(result.batches.start_ms))
    imbalance = imbalance_ms(result, result.first_measured)
    wait, batching = measured_wait_ms(result) if waits_ms is None else waits_ms
    imb = np.zeros(n) if imbalance is None else imbalance
    parts = batch_parts(result)
    out = []
    for idx in [*groups, None]:
        sel = slice(None) if idx is None else idx
        row = {"requests": n if idx is None else len(idx), "latency": float(np.mean(latency[sel]))}
        row["batching"] = float(np.mean(batching[sel]))
        row["imbalance"] = float(np.mean(imb[sel]))
        row["queueing"] = float(np.mean(wait[sel])) - row["batching"] - row["imbalance"]
        for name, per_batch in parts.items():
            if idx is None:  # mean over requests = count-weighted mean over batches, summed
                # by numpy's fixed pairwise order: np.dot would hand it to BLAS, whose thread
                # count changes the summation order and so the last digits
                row[name] = float(np.sum(per_batch * per_batch_count) / n)
            else:
                row[name] = float(np.mean(per_batch[batch_of[idx]]))
        out.append({k: row[k] for k in ("requests", "latency", *COMPONENTS, "spill")})
    return out


def active_drivers(result: RuntimeResult, table: ServiceTable | None) -> tuple[str, ...]:
    """Drivers whose switch-off can change the run (the others have Shapley value 0 exactly)."""
    cfg = result.config
    active = []
    if cfg.placement != "central-queue":
        active.append("placement")
    if np.any(result.batches.fallback) or np.any(result.batches.stall_ms > 0):
        active.append("fallback")
    if _contention_possible(cfg, table):
        active.append("contention")
    return tuple(active)


def _contention_possible(config: RuntimeConfig, table: ServiceTable | None) -> bool:
    """Whether switching contention off can change a run: it is on, service comes from a
    table (a pinned distribution has no traffic), and all cores bursting at once can ask for
    more than the HBM bandwidth or a busy table's times differ (a smaller shared-cache share
    when other cores are busy)."""
    if not config.contention or config.service.source == "distribution" or table is None:
        return False
    burst = max(_burst_rate(t) for t in (table, *table.busy))
    shares_cache = any(not np.array_equal(t.time_ms, table.time_ms) for t in table.busy)
    return config.hardware.cores * burst > config.hardware.hbm_gbs * 1e6 or shares_cache


def _burst_rate(table: ServiceTable) -> float:
    """Highest HBM demand of a compute- or memory-bound phase in the table, bytes/ms."""
    compute_bytes = table.hbm_bytes - table.memory_bound_bytes
    with np.errstate(divide="ignore", invalid="ignore"):
        memory = np.where(
            table.memory_bound_ms > 0, table.memory_bound_bytes / table.memory_bound_ms, 0.0
        )
        compute = np.where(table.compute_bound_ms > 0, compute_bytes / table.compute_bound_ms, 0.0)
    return float(max(np.max(memory), np.max(compute)))


def switched_off(
    config: RuntimeConfig,
    table: ServiceTable | None,
    all_compiled_table: ServiceTable | None,
    off: frozenset[str],
) -> tuple[RuntimeConfig, ServiceTable | None]:
    """The configuration (and table) with the drivers in `off` switched off."""
    changes: dict = {}
    if "placement" in off:
        changes["placement"] = "central-queue"
    if "contention" in off:
        changes["contention"] = False
    if "fallback" in off:
        changes["fallback"] = Fallback(compile_stall_ms=0.0, dispatch_overhead_us=0.0)
        if config.service.source == "distribution":
            changes["compiled_shapes"] = None
        elif all_compiled_table is not None:
            table = all_compiled_table
    return dataclasses.replace(config, **changes), table


def shapley_values(values: dict[frozenset[str], float], drivers: tuple[str, ...]) -> dict:
    """Exact Shapley split of values[{}] - values[all drivers] (the drop when each is off)."""
    n = len(drivers)
    out = {}
    for d in drivers:
        others = [x for x in drivers if x != d]
        total = 0.0
        for size in range(n):
            weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
            for subset in combinations(others, size):
                s = frozenset(subset)
                total += weight * (values[s] - values[s | {d}])
        out[d] = total
    return out


def counterfactual_order(
    drivers: tuple[str, ...], *, longest_first: bool = True
) -> tuple[frozenset[str], ...]:
    """The 2^k - 1 re-runs over the k active `drivers`: each non-empty subset switched off,
    once. `longest_first` (runs that overlap on the pool) puts the runs that keep contention on
    first (three phases a batch and the bandwidth sharing, where a run without contention folds
    its memory phase into one event: about twice the kernel time), so the pool's threads finish
    close together; otherwise (one at a time) plain subset order."""
    subsets = tuple(
        frozenset(c) for size in range(1, len(drivers) + 1) for c in combinations(drivers, size)
    )
    if not longest_first:
        return subsets
    return tuple(sorted(subsets, key=lambda off: "contention" in off))  # stable


@dataclass(frozen=True)
class PendingCounterfactuals:
    """Counterfactual re-runs handed to a pool (`start_counterfactuals`), not yet combined.

    Attributes:
        drivers: the active drivers, in DRIVERS order.
        runs: the subsets switched off, in the order submitted (`counterfactual_order`).
        futures: (p95, p99) of each run, ms, in the same order.
        tasks: the same re-runs as calls (built ahead: up to CONCURRENT_MAX_REQUESTS
            requests), for the caller to run any the pool has not started; () otherwise.
    """

    drivers: tuple[str, ...]
    runs: tuple[frozenset[str], ...]
    futures: tuple[Future, ...]
    tasks: tuple[Callable[[], tuple[float, float]], ...] = ()


def counterfactual_pool(requests: int) -> ThreadPoolExecutor:
    """The pool the re-runs of a run of `requests` requests share: COUNTERFACTUAL_WORKERS - 1
    threads (the caller is the other, `finish_counterfactuals`), one above
    CONCURRENT_MAX_REQUESTS requests (memory: the caller then only waits). One per summary,
    not one per process: a thread keeps the sys.stderr it was started under, which inside the
    app is Textual's capture, and through it the whole app (a process-wide pool kept the first
    app of a test session alive)."""
    small = requests <= CONCURRENT_MAX_REQUESTS
    return ThreadPoolExecutor(max_workers=max(1, COUNTERFACTUAL_WORKERS - 1) if small else 1)


def start_counterfactuals(
    result: RuntimeResult,
    table: ServiceTable | None,
    all_compiled_table: ServiceTable | None,
    pool: Executor,
) -> PendingCounterfactuals:
    """Submit the 2^k - 1 re-runs over the k active drivers of a finished run to `pool` (the
    run itself is the subset with none off): `start_reruns` over `active_drivers`."""
    drivers = active_drivers(result, table)
    return start_reruns(
        result.config, result.stream, result.first_measured, table, all_compiled_table, pool,
        drivers,
    )  # fmt: skip


def possible_drivers(
    config: RuntimeConfig,
    table: ServiceTable | None,
    stream: RequestStream,
    *,
    shared: SharedInputs | None = None,
) -> tuple[str, ...]:
    """The drivers `active_drivers` can find active once `config` has run on `stream`, known
    before the run: placement and contention are decided by the inputs alone; fallback needs a
    batch on a fallback column, so it is possible only when some request's shape falls on one
    (a batch's column is one of its requests'). A superset of the active drivers: what
    `start_reruns` runs before the base run ends (`finish_counterfactuals` drops the re-runs
    of a driver that turned out inactive). `shared`: where the re-runs' builds will look for
    the requests' shape columns this finds (`start_reruns`)."""
    cfg = config
    pinned = cfg.service.source == "distribution"
    possible = []
    if cfg.placement != "central-queue":
        possible.append("placement")
    columns = shape_columns(cfg, None if pinned else table)
    if np.any(columns.fallback):
        req_col = request_columns(columns, stream)
        if shared is not None:
            shared.note_request_columns(stream, columns.shapes, req_col)
        if np.any(columns.fallback[req_col]):
            possible.append("fallback")
    if _contention_possible(cfg, table):
        possible.append("contention")
    return tuple(possible)


def start_reruns(
    config: RuntimeConfig,
    stream: RequestStream,
    first: int,
    table: ServiceTable | None,
    all_compiled_table: ServiceTable | None,
    pool: Executor,
    drivers: tuple[str, ...],
    shared: SharedInputs | None = None,
) -> PendingCounterfactuals:
    """Submit the 2^k - 1 re-runs over the k `drivers` (DRIVERS order) of `config` on `stream`
    to `pool`, longest first up to CONCURRENT_MAX_REQUESTS requests; `first`: the run's first
    measured request. Each reuses the request stream (arrivals, shapes, service and placement
    draws) and is a latency-only run (`prepare_latency_run`: no timeline, of the per-batch
    arrays only finish written), of which only the four order statistics of its two
    percentiles come back (`rerun_tail`). Up to CONCURRENT_MAX_REQUESTS requests the runs are
    built here, one after another (sharing their equal per-request arrays), and handed over
    built: a pool thread then holds the GIL only to enter two numba calls that release it
    (nogil=True), so the re-runs overlap each other and the caller's own work. Larger runs are
    built in the pool when their turn comes (one run's arrays alive at a time). Needs no
    finished run: `run_summary` starts them before its base run (`possible_drivers`).
    `shared`: what the builds share (up to CONCURRENT_MAX_REQUESTS requests; a fresh one when
    None)."""
    small = len(stream.arrival_ms) <= CONCURRENT_MAX_REQUESTS
    runs = counterfactual_order(drivers, longest_first=small)
    if not small:
        shared = None
    elif shared is None:
        shared = SharedInputs()

    def build(off: frozenset[str]) -> LatencyRun:
        cfg, tab = switched_off(config, table, all_compiled_table, off)
        return prepare_latency_run(cfg, tab, stream, shared=shared)

    if not small:
        futures = tuple(pool.submit(lambda off=off: rerun_tail(build(off), first)) for off in runs)
        return PendingCounterfactuals(drivers, runs, futures)
    ranks = tail_ranks(len(stream.arrival_ms) - first) if runs else None
    tasks, futures = [], []
    for off in runs:
        tasks.append(functools.partial(rerun_tail, build(off), first, ranks))
        futures.append(pool.submit(tasks[-1]))
    return PendingCounterfactuals(drivers, runs, tuple(futures), tuple(tasks))


def finish_counterfactuals(
    pending: PendingCounterfactuals,
    base_tail: tuple[float, float],
    *,
    pinned: bool,
    all_compiled_table: ServiceTable | None,
    drivers: tuple[str, ...] | None = None,
) -> dict:
    """Wait for the re-runs and split p99 (and p95) exactly over the drivers (Shapley), ms.
    `base_tail` is the run's own (p95, p99). `drivers`: the run's active drivers when the
    re-runs were started before it ended over a superset (`possible_drivers`); the re-runs of
    any other driver are cancelled or, once running, ignored. Where the re-runs were built
    ahead (`tasks`), the caller runs those the pool has not started, from the back of the
    queue while the pool works from the front. The sums run in subset order, whichever thread
    ran a re-run and whichever finished first, so the bytes never depend on the threads, nor
    on whether the re-runs started before the run ended."""
    if drivers is None:
        drivers = pending.drivers
    elif not set(drivers) <= set(pending.drivers):
        raise ValueError(f"re-runs started for {pending.drivers}, not for {drivers}")
    wanted = [off <= set(drivers) for off in pending.runs]
    for j, future in enumerate(pending.futures):
        if not wanted[j]:
            future.cancel()  # a driver found inactive: its re-run is not needed
    done: dict[int, tuple[float, float]] = {}
    for j in reversed(range(len(pending.tasks))):  # the caller takes re-runs from the back
        if wanted[j] and pending.futures[j].cancel():  # not yet started by the pool
            done[j] = pending.tasks[j]()
    tails = {frozenset(): base_tail}
    for j, (off, future) in enumerate(zip(pending.runs, pending.futures, strict=True)):
        if wanted[j]:
            tails[off] = done[j] if j in done else future.result()
    p95 = {off: t[0] for off, t in tails.items()}
    p99 = {off: t[1] for off, t in tails.items()}
    s99, s95 = shapley_values(p99, drivers), shapley_values(p95, drivers)
    everything = frozenset(drivers)
    if pinned or all_compiled_table is not None:
        fallback_means = "every shape compiled: no compile stall, compiled-path service times"
    else:
        fallback_means = "compile stalls removed only (no all-compiled table given)"
    return {
        "p99_ms": p99[frozenset()],
        "p99_all_off_ms": p99[everything],
        "p99_drop_if_off_ms": {d: float(s99.get(d, 0.0)) for d in DRIVERS},
        "p95_ms": p95[frozenset()],
        "p95_all_off_ms": p95[everything],
        "p95_drop_if_off_ms": {d: float(s95.get(d, 0.0)) for d in DRIVERS},
        "runs": 2 ** len(drivers),
        "fallback_off_means": fallback_means,
    }


def counterfactual_attribution(
    result: RuntimeResult,
    table: ServiceTable | None,
    all_compiled_table: ServiceTable | None = None,
) -> dict:
    """How much p99 (and p95) would drop with each driver off, Shapley-split exactly, ms.

    Every counterfactual reuses the run's request stream (arrivals, shapes, service and
    placement draws). Without an all-compiled table, "fallback off" removes compile stalls
    only and keeps the generic path's service times (said in `fallback_off_means`).
    (`model.runtime.summary.summarize` runs the same re-runs beside its other statistics.)
    """
    with counterfactual_pool(len(result.stream.arrival_ms)) as pool:
        # The run's own tail in the pool's thread, first, as the re-runs after it: glibc then
        # serves them all from that thread's heap, which keeps a large run's peak lower
        # (tests/runtime/test_memory.py measures it).
        base = pool.submit(lambda: tail_percentiles(measured_latency_ms(result)))
        pending = start_counterfactuals(result, table, all_compiled_table, pool)
        return finish_counterfactuals(
            pending, base.result(), pinned=result.pinned, all_compiled_table=all_compiled_table
        )
