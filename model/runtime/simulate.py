"""Runtime simulator: requests -> batches -> cores -> completions, with fallback and shared HBM.

`simulate(config, table)` draws the request stream from the seed, plans the queues (placement,
bucketing), runs the event loop in `model.runtime.kernel` and returns per-request and
per-batch arrays plus the HBM demand timeline. Semantics are in model/runtime/README.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from model.runtime.inputs import RuntimeConfig
from model.runtime.queues import (
    QueuePlan,
    ShapeColumns,
    plan_queues,
    shape_columns,
    table_rows,
)
from model.runtime.workload import RequestStream, generate_requests
from model.service import ServiceTable

FIXED_DISPATCH = ("central-queue", "round-robin", "random")
UNSERVED = "runtime kernel left requests unserved (empty core set?)"


@dataclass(frozen=True)
class RequestTrace:
    """Per-request outcome, sorted by arrival. Times in ms.

    Attributes:
        arrival_ms: (N,) float64 arrival.
        seq_len: (N,) int64 runtime shape.
        batch: (N,) int32 batch id of each request (its row in `batches`).
        batches: the per-batch outcome the per-request views below gather from.
        identity: request i is batch i (the single-request FIFO path: views, no gathers).
    Gathered from the request's batch on first use, then kept (8 bytes per request each; the
    run's statistics use `of_batch` instead, which keeps nothing: model/runtime/README.md
    "Memory"): start_ms (service start: its batch's dispatch), finish_ms (completion),
    ready_ms (when its batch was ready to go: full, or its timer expired), core, fallback (its
    batch ran the generic path), stretch_ms (contention stretch of its batch). Derived on first
    use: queue_wait_ms (start - arrival, batching wait included), batching_wait_ms (the part
    until the batch was ready, or service start if sooner) and service_ms (finish - start).
    """

    arrival_ms: np.ndarray
    seq_len: np.ndarray
    batch: np.ndarray
    batches: BatchTrace = field(repr=False, compare=False)
    identity: bool = False

    def of_batch(self, per_batch: np.ndarray, sel: slice | np.ndarray = slice(None)):
        """Per-request values of a per-batch array for the requests `sel` selects, in request
        order: a fresh array (a view on the single-request path), never kept on the trace."""
        return per_batch[sel] if self.identity else per_batch[self.batch[sel]]

    @cached_property
    def start_ms(self) -> np.ndarray:
        """Service start (its batch's dispatch), ms."""
        return self.of_batch(self.batches.start_ms)

    @cached_property
    def finish_ms(self) -> np.ndarray:
        """Completion, ms."""
        return self.of_batch(self.batches.finish_ms)

    @cached_property
    def ready_ms(self) -> np.ndarray:
        """When the request's batch was ready to go (full, or its timer expired), ms."""
        return self.of_batch(self.batches.ready_ms)

    @cached_property
    def core(self) -> np.ndarray:
        """Core that served the request."""
        return self.of_batch(self.batches.core)

    @cached_property
    def fallback(self) -> np.ndarray:
        """The request's batch ran the generic (fallback) path."""
        return self.of_batch(self.batches.fallback)

    @cached_property
    def stretch_ms(self) -> np.ndarray:
        """Contention stretch of the request's batch, ms."""
        return self.of_batch(self.batches.stretch_ms)

    @cached_property
    def queue_wait_ms(self) -> np.ndarray:
        """start - arrival, ms (batching wait included)."""
        return self.start_ms - self.arrival_ms

    @cached_property
    def batching_wait_ms(self) -> np.ndarray:
        """Part of the queue wait until the batch was ready (full or timer), ms."""
        wait = self.queue_wait_ms
        return np.minimum(np.maximum(self.ready_ms - self.arrival_ms, 0.0), wait)

    @cached_property
    def service_ms(self) -> np.ndarray:
        """finish - start, ms (stall, launch, compute, memory and contention stretch)."""
        return self.finish_ms - self.start_ms


@dataclass(frozen=True)
class BatchTrace:
    """Per-batch outcome (batch ids are arbitrary but consistent). Times in ms, traffic in bytes.

    Attributes:
        start_ms, ready_ms, memory_start_ms, finish_ms: dispatch, when the batch became ready
            (full or timer), start of its memory phase, completion.
        core, size: core and number of requests.
        seq_len: padded shape the batch ran at (its largest request's shape).
        fallback: ran the generic path.
        stall_ms: compile stall paid (first batch of a new fallback shape, or waiting for it).
        launch_ms, compute_ms, memory_ms: unstretched service parts at the batch's busy-core
            level (see busy_cores; memory_ms less shared_cache_ms; pinned distribution: the
            draw is reported as compute_ms). With an all-compiled table given, fallback batches
            report the compiled path's parts here and the difference in fallback_extra_ms.
        fallback_extra_ms: extra time of the generic path over the compiled one (pinned
            distribution: the dispatch overhead); 0 where unknown or not fallback.
        busy_cores: the busy-core count whose service table the batch ran with: cores busy
            at its dispatch, itself included, capped at the levels the table has (1 when
            contention is off or the table has no busy levels).
        shared_cache_ms: extra service time because the busy cores shared the shared cache
            (data re-read through it alone came from HBM): the busy-core table's time minus
            the alone table's, ms (0 when pinned or with one level).
        stretch_ms: extra time of the compute- and memory-bound phases from shared-HBM contention.
        hbm_bytes, memory_bound_bytes, spill_bytes: traffic of the batch (0 when pinned).
        launches: kernels launched (0 when pinned).
    """

    start_ms: np.ndarray
    ready_ms: np.ndarray
    memory_start_ms: np.ndarray
    finish_ms: np.ndarray
    core: np.ndarray
    size: np.ndarray
    seq_len: np.ndarray
    fallback: np.ndarray
    stall_ms: np.ndarray
    launch_ms: np.ndarray
    compute_ms: np.ndarray
    memory_ms: np.ndarray
    fallback_extra_ms: np.ndarray
    busy_cores: np.ndarray
    shared_cache_ms: np.ndarray
    stretch_ms: np.ndarray
    hbm_bytes: np.ndarray
    memory_bound_bytes: np.ndarray
    spill_bytes: np.ndarray
    launches: np.ndarray


@dataclass(frozen=True)
class HbmTimeline:
    """Total requested HBM demand of the memory phases in flight, piecewise constant.

    Attributes:
        time_ms: (T,) change points, ascending (starts at 0).
        demand_gbs: (T,) requested demand from time_ms[i] until time_ms[i+1], GB/s.
        capacity_gbs: device bandwidth, GB/s (served traffic is min(demand, capacity)).
    """

    time_ms: np.ndarray
    demand_gbs: np.ndarray
    capacity_gbs: float


@dataclass(frozen=True)
class RuntimeResult:
    """Everything one simulation produced.

    Attributes:
        config: the configuration simulated.
        requests: per-request outcome.
        batches: per-batch outcome.
        hbm: HBM demand timeline.
        stream: the request stream simulated (counterfactual runs reuse it).
        first_measured: index of the first request statistics use (warm-up before it).
        pinned: service came from a pinned distribution (no traffic, no launches).
        fallback_cost_known: the generic path's extra time is known (pinned distribution, or
            an all-compiled table was given).
    """

    config: RuntimeConfig
    requests: RequestTrace
    batches: BatchTrace
    hbm: HbmTimeline
    stream: RequestStream
    first_measured: int
    pinned: bool
    fallback_cost_known: bool


@dataclass(frozen=True)
class KernelOutput:
    """Raw per-batch arrays of one kernel run (see model.runtime.kernel), n_batches long."""

    req_batch: np.ndarray  # int32 batch of each request
    start: np.ndarray
    ready: np.ndarray
    memory_start: np.ndarray
    finish: np.ndarray
    core: np.ndarray
    size: np.ndarray
    col: np.ndarray
    lead: np.ndarray
    stall: np.ndarray
    memory: np.ndarray
    slowed: np.ndarray
    level: np.ndarray  # service-table level: cores busy at dispatch - 1
    timeline_ms: np.ndarray
    timeline_demand: np.ndarray
    identity: bool  # batch i is request i (the single-request FIFO path)


class KernelArrays(NamedTuple):
    """What `model.runtime.kernel.simulate_kernel` returns, field by field in its order: the
    per-batch arrays are sized for one batch per request and valid up to n_batches, the
    timeline up to n_timeline (times ms, demand bytes/ms)."""

    req_batch: np.ndarray  # int32 batch of each request (-1: unserved)
    start: np.ndarray
    ready: np.ndarray
    memory_start: np.ndarray
    finish: np.ndarray
    core: np.ndarray
    size: np.ndarray
    col: np.ndarray
    lead: np.ndarray
    stall: np.ndarray
    compute: np.ndarray  # not read: the table gives the service parts
    memory: np.ndarray
    slowed: np.ndarray
    level: np.ndarray
    n_batches: int
    timeline_ms: np.ndarray
    timeline_demand: np.ndarray
    n_timeline: int


def fifo_path_applies(config: RuntimeConfig, plan: QueuePlan, columns: ShapeColumns) -> bool:
    """True when the run is single-request FIFO with fixed or pooled dispatch and nothing
    state-dependent beyond it: pinned service, max_batch 1, no compile stall to pay."""
    return (  # the per-request look-up last, only when the rest holds
        config.service.source == "distribution"
        and int(config.batch_policy.max_batch) == 1
        and config.placement in FIXED_DISPATCH
        and not (
            config.fallback.compile_stall_ms > 0 and bool(np.any(columns.fallback[plan.req_col]))
        )
    )


def kernel_args(
    config: RuntimeConfig,
    table: ServiceTable | None,
    columns: ShapeColumns,
    plan: QueuePlan,
    stream: RequestStream,
    *,
    allow_fifo: bool = True,
    timeline: bool = True,
    grids: tuple | None = None,
) -> tuple[bool, tuple]:
    """(fifo, arguments) of the run's kernel call: `model.runtime.kernel.fifo_kernel`'s when
    fifo (the single-request FIFO loop applies and is allowed), else `simulate_kernel`'s (with
    `timeline` False a latency-only run: see run_kernel). `grids`: `table_grids` of the
    table when the caller has them."""
    arrival = np.ascontiguousarray(stream.arrival_ms, dtype=np.float64)
    draws = np.ascontiguousarray(stream.service_draw_ms, dtype=np.float64)
    fallback = np.ascontiguousarray(columns.fallback, dtype=np.bool_)
    overhead_ms = float(config.fallback.dispatch_overhead_us) / 1000.0
    if allow_fifo and fifo_path_applies(config, plan, columns):
        pooled = config.placement == "central-queue"
        return True, (
            arrival, plan.req_base, plan.req_col, draws, fallback, overhead_ms,
            int(config.hardware.cores), pooled,
        )  # fmt: skip
    big_b = int(config.batch_policy.max_batch)
    if grids is None:
        grids = table_grids(table, big_b, len(columns.shapes))
    size_row, *grids = grids
    return False, (
        arrival, plan.req_col, plan.req_sub, plan.req_base, plan.req_est_ms, draws,
        plan.least_loaded, int(config.hardware.cores), plan.n_sub, plan.lane_core_ptr,
        plan.lane_core_idx, big_b, float(config.batch_policy.max_queue_delay_ms),
        table is None, size_row, *grids, fallback, float(config.fallback.compile_stall_ms),
        overhead_ms, bool(config.contention), float(config.hardware.hbm_gbs) * 1e6, timeline,
    )  # fmt: skip


def table_grids(table: ServiceTable | None, max_batch: int, n_shapes: int) -> tuple:
    """(size_row, launch, compute, memory, memory bytes, compute bytes) as the event loop reads
    them: the (max_batch + 1,) int64 table row of each batch size and five (L, B, S) float64
    grids per busy-core level (ms; bytes moved by the memory- and compute-bound kernels).
    Pinned service (no table): zeros, one level, one row, n_shapes columns."""
    if table is None:
        zeros = [np.zeros((1, 1, n_shapes)) for _ in range(5)]
        return (np.zeros(max_batch + 1, dtype=np.int64), *zeros)
    names = ("launch_ms", "compute_bound_ms", "memory_bound_ms", "memory_bound_bytes")
    grids = [np.ascontiguousarray(level_stack(table, name)) for name in names]
    compute_bytes = level_stack(table, "hbm_bytes") - grids[3]  # moved by compute-bound
    grids.append(np.ascontiguousarray(np.maximum(compute_bytes, 0.0)))
    return (table_rows(table, max_batch), *grids)


def run_kernel(
    config: RuntimeConfig,
    table: ServiceTable | None,
    columns: ShapeColumns,
    plan: QueuePlan,
    stream: RequestStream,
    *,
    allow_fifo: bool = True,
    timeline: bool = True,
) -> KernelOutput:
    """Run the event loop (or, where it applies, the equivalent single-request FIFO loop);
    `timeline` False is a latency-only run: no HBM demand timeline, and of the event loop's
    per-batch arrays only `finish` (and `req_batch`) hold results (model.runtime.kernel)."""
    from model.runtime.kernel import fifo_kernel, simulate_kernel  # numba loads only here

    fifo, args = kernel_args(
        config, table, columns, plan, stream, allow_fifo=allow_fifo, timeline=timeline
    )
    if fifo:
        start, finish, core = fifo_kernel(*args)
        n = len(start)
        zeros = np.zeros(n)  # lazily allocated by the OS: free until written
        ids = np.arange(n, dtype=np.int32)
        return KernelOutput(
            req_batch=ids,
            start=start,
            ready=args[0],  # the arrivals
            memory_start=finish,
            finish=finish,
            core=core,
            size=np.broadcast_to(np.int32(1), (n,)),  # read-only view, no memory
            col=plan.req_col,
            lead=ids,
            stall=zeros,
            memory=zeros,
            slowed=np.zeros(n, np.bool_),
            level=np.zeros(n, np.int32),
            timeline_ms=np.zeros(1),
            timeline_demand=np.zeros(1),
            identity=True,
        )
    raw = KernelArrays(*simulate_kernel(*args))
    nb, n_tl = int(raw.n_batches), int(raw.n_timeline)
    if np.any(raw.req_batch < 0):
        raise RuntimeError(UNSERVED)
    return KernelOutput(  # views on the first nb (n_tl) entries: no copies
        req_batch=raw.req_batch,
        start=raw.start[:nb],
        ready=raw.ready[:nb],
        memory_start=raw.memory_start[:nb],
        finish=raw.finish[:nb],
        core=raw.core[:nb],
        size=raw.size[:nb],
        col=raw.col[:nb],
        lead=raw.lead[:nb],
        stall=raw.stall[:nb],
        memory=raw.memory[:nb],
        slowed=raw.slowed[:nb],
        level=raw.level[:nb],
        timeline_ms=raw.timeline_ms[:n_tl],
        timeline_demand=raw.timeline_demand[:n_tl],
        identity=False,
    )


def service_parts(table: ServiceTable, level: np.ndarray, row: np.ndarray, col: np.ndarray):
    """(launch, compute, memory, shared_cache) ms of batches run at busy-core `level` (cores
    busy at dispatch - 1): the level's launch and compute-bound time, its memory-bound time
    less shared_cache, and shared_cache = the level's service time minus the core alone's (the
    cost of a smaller share of the shared cache). The four sum to the level's service time."""
    compute = level_stack(table, "compute_bound_ms")[level, row, col]
    memory = level_stack(table, "memory_bound_ms")[level, row, col]
    shared = level_stack(table, "time_ms")[level, row, col] - table.time_ms[row, col]
    shared = np.maximum(shared, 0.0)  # less cache is never faster (rounding aside)
    return table.launch_ms[row, col], compute, memory - shared, shared


def level_stack(table: ServiceTable, name: str) -> np.ndarray:
    """(L, B, S) float64 array of one service part per busy-core level: the table alone, then
    its `busy` tables (level c - 1: c cores busy)."""
    return np.stack([np.asarray(getattr(t, name), np.float64) for t in (table, *table.busy)])


def first_measured(config: RuntimeConfig, stream: RequestStream) -> int:
    """Index of the first request a run of `config` on `stream` measures: the warm-up is the
    first `warmup_fraction` of the requests by arrival (`RuntimeResult.first_measured`)."""
    return int(config.workload.warmup_fraction * len(stream.arrival_ms))


def simulate(
    config: RuntimeConfig,
    table: ServiceTable | None = None,
    *,
    all_compiled_table: ServiceTable | None = None,
    stream: RequestStream | None = None,
    allow_fifo: bool = True,
) -> RuntimeResult:
    """Simulate one run.

    Args:
        config: the run's inputs (seed included).
        table: service-time table (required when `config.service.source` is `model`).
        all_compiled_table: optional table of the same plan with every shape compiled; gives
            the generic path's extra cost over the compiled path (fallback_extra_ms).
        stream: pre-drawn requests (the counterfactuals reuse them); drawn from the seed if None.
        allow_fifo: use the single-request FIFO loop where it applies (same results; tests
            switch it off to compare).
    """
    pinned = config.service.source == "distribution"
    if not pinned and table is None:
        raise ValueError("service.source is model but no service table was given")
    if pinned:
        table = None
    if stream is None:
        stream = generate_requests(config.workload, config.service, config.seed)
    columns, out = _run(config, table, stream, allow_fifo=allow_fifo, timeline=True)
    batches = _batch_trace(config, table, all_compiled_table, columns, stream, out)
    return RuntimeResult(
        config=config,
        requests=RequestTrace(
            stream.arrival_ms, stream.seq_len, out.req_batch, batches, identity=out.identity
        ),
        batches=batches,
        hbm=HbmTimeline(
            time_ms=out.timeline_ms,
            demand_gbs=out.timeline_demand / 1e6,
            capacity_gbs=float(config.hardware.hbm_gbs),
        ),
        stream=stream,
        first_measured=first_measured(config, stream),
        pinned=pinned,
        fallback_cost_known=pinned or all_compiled_table is not None,
    )


def simulate_latency_ms(
    config: RuntimeConfig,
    table: ServiceTable | None,
    stream: RequestStream,
    *,
    allow_fifo: bool = True,
) -> np.ndarray:
    """(N,) latency (finish - arrival) of every request, ms: the same event loop as `simulate`
    (so the same values to the last bit), without the per-batch trace, the HBM timeline or the
    per-request arrays. What the counterfactual re-runs need: their percentiles."""
    if config.service.source == "distribution":
        table = None
    elif table is None:
        raise ValueError("service.source is model but no service table was given")
    _, out = _run(config, table, stream, allow_fifo=allow_fifo, timeline=False)
    finish = out.finish if out.identity else out.finish[out.req_batch]
    finish -= stream.arrival_ms  # in place: a gather is a fresh array; the FIFO path's is ours
    return finish


@dataclass(frozen=True)
class LatencyRun:
    """A latency-only run with its kernel's arguments built, not yet run: the counterfactual
    re-runs are built on the caller's thread and run on a pool, where `order_stats` holds the
    GIL only to enter its two numba calls (both release it).

    Attributes:
        arrival_ms: (N,) float64 arrival of every request, ms.
        fifo: `args` are `model.runtime.kernel.fifo_kernel`'s (request i is batch i), else
            `simulate_kernel`'s with timeline False (see `kernel_args`).
        args: the kernel's arguments.
    """

    arrival_ms: np.ndarray
    fifo: bool
    args: tuple = field(repr=False)

    def order_stats(self, first: int, ranks: np.ndarray) -> np.ndarray:
        """(R,) float64 latencies (finish - arrival, ms) of the measured requests (`first`
        on) at the 0-based `ranks` ((R,) int64) of their ascending order: the same values
        `simulate_latency_ms(...)[first:]` sorted holds there, without keeping either array."""
        from model.runtime.kernel import fifo_kernel, measured_order_stats, simulate_kernel

        ranks = np.ascontiguousarray(ranks, dtype=np.int64)
        if self.fifo:
            _, finish, _ = fifo_kernel(*self.args)
            return measured_order_stats(finish, NO_BATCH, True, self.arrival_ms, first, ranks)
        raw = KernelArrays(*simulate_kernel(*self.args))
        finish, req_batch = raw.finish, raw.req_batch
        del raw  # the other per-batch arrays go before the latencies are gathered (peak memory)
        out = measured_order_stats(finish, req_batch, False, self.arrival_ms, first, ranks)
        if len(out) != len(ranks):
            raise RuntimeError(UNSERVED)
        return out


NO_BATCH = np.zeros(1, np.int32)  # req_batch placeholder where request i is batch i


@dataclass(frozen=True)
class SharedInputs:
    """What latency-only runs built together share, filled as they are built.

    Attributes:
        plans: (config with contention off, table, stream, shape columns, queue plan) of each
            run built: `shape_columns` and `plan_queues` never read `contention` (the kernel
            does), so a run differing only there reuses them.
        arrays: per-request arguments by (dtype, shape): a run's argument with the same bytes
            as one of them is replaced by it (every run's shape column; the work estimates of
            runs with the same table), so the runs in flight hold one copy.
        grids: (table, (max_batch, shapes), `table_grids`) of each table a run used.
        req_cols: (stream, shape columns' shapes, `request_columns`) of each stream and set of
            columns seen (by a run built or by `note_request_columns`).
    """

    plans: list = field(default_factory=list)
    arrays: dict = field(default_factory=dict)
    grids: list = field(default_factory=list)
    req_cols: list = field(default_factory=list)

    def note_request_columns(self, stream, shapes: np.ndarray, req_col: np.ndarray) -> None:
        """Keep a stream's request columns over `shapes`, computed outside a build (the runs
        built later over the same shapes reuse them)."""
        self.req_cols.append((stream, shapes, req_col))

    def table_grids(self, table, max_batch: int, n_shapes: int) -> tuple:
        """`table_grids`, reused from a run built before with the same table and sizes."""
        for tab, key, grids in self.grids:
            if tab is table and key == (max_batch, n_shapes):
                return grids
        grids = table_grids(table, max_batch, n_shapes)
        self.grids.append((table, (max_batch, n_shapes), grids))
        return grids

    def columns_and_plan(self, config, table, stream) -> tuple[ShapeColumns, QueuePlan]:
        """`shape_columns` and `plan_queues` of a run, reused from a run built before when
        they would be the same: the same table, request stream and workload (the objects:
        a trace is not compared by value) and the same configuration but for contention.
        Runs of the same stream over the same shape columns share the requests' columns."""
        key = dataclasses.replace(config, contention=False)
        for cfg, tab, drawn, columns, plan in self.plans:
            same = tab is table and drawn is stream and cfg.workload is key.workload
            if same and cfg == key:
                return columns, plan
        columns = shape_columns(config, table)
        req_col = next(
            (
                cols
                for drawn, shapes, cols in self.req_cols
                if drawn is stream and np.array_equal(shapes, columns.shapes)
            ),
            None,
        )
        plan = plan_queues(config, columns, stream, req_col=req_col)
        if req_col is None:
            self.note_request_columns(stream, columns.shapes, plan.req_col)
        self.plans.append((key, table, stream, columns, plan))
        return columns, plan

    def same_bytes(self, a: np.ndarray) -> np.ndarray:
        """The array already held with a's dtype, shape and bytes (compared as bytes: 0.0 and
        -0.0 differ), else a, now held."""
        alike = self.arrays.setdefault((a.dtype.str, a.shape), [])
        for b in alike:
            if b is a or np.array_equal(b.view(np.uint8), a.view(np.uint8)):
                return b
        alike.append(a)
        return a


def prepare_latency_run(
    config: RuntimeConfig,
    table: ServiceTable | None,
    stream: RequestStream,
    *,
    allow_fifo: bool = True,
    shared: SharedInputs | None = None,
) -> LatencyRun:
    """The latency-only run `simulate_latency_ms` makes, built and not yet run (`LatencyRun`).
    `shared`: what runs built before it hold (see SharedInputs; None: nothing shared)."""
    if config.service.source == "distribution":
        table = None
    elif table is None:
        raise ValueError("service.source is model but no service table was given")
    if shared is None:
        columns = shape_columns(config, table)
        plan = plan_queues(config, columns, stream)
        grids = None
    else:
        columns, plan = shared.columns_and_plan(config, table, stream)
        big_b = int(config.batch_policy.max_batch)
        grids = shared.table_grids(table, big_b, len(columns.shapes))
    fifo, args = kernel_args(config, table, columns, plan, stream, allow_fifo=allow_fifo,
                             timeline=False, grids=grids)  # fmt: skip
    if shared is not None:
        n = len(stream.arrival_ms)
        args = tuple(shared.same_bytes(a) if _per_request(a, n) else a for a in args)
    return LatencyRun(arrival_ms=args[0], fifo=fifo, args=args)


def _per_request(a, n: int) -> bool:
    """An (N,) contiguous array argument (one entry per request): worth sharing."""
    return isinstance(a, np.ndarray) and a.ndim == 1 and len(a) == n > 1 and a.flags.c_contiguous


def _run(config, table, stream, *, allow_fifo: bool, timeline: bool):
    """(shape columns, kernel output) of one run; the queue plan is dropped on return."""
    columns = shape_columns(config, table)
    plan = plan_queues(config, columns, stream)
    return columns, run_kernel(
        config, table, columns, plan, stream, allow_fifo=allow_fifo, timeline=timeline
    )


def _batch_trace(config, table, all_compiled_table, columns, stream, out: KernelOutput):
    """Per-batch arrays from the kernel's output plus table look-ups of the service parts."""
    nb = len(out.start)
    fallback = columns.fallback[out.col]
    zeros = np.zeros(nb)  # lazily allocated by the OS: free until written
    if table is None:
        overhead = config.fallback.dispatch_overhead_us / 1000.0
        launch, memory = zeros, zeros
        compute = stream.service_draw_ms if out.identity else stream.service_draw_ms[out.lead]
        extra = fallback * overhead if overhead > 0 else zeros
        traffic = (zeros, zeros, zeros, np.zeros(nb, np.int64))
        shared_cache = zeros
    else:
        big_b = int(config.batch_policy.max_batch)
        row = table_rows(table, big_b)[out.size]
        launch, compute, memory, shared_cache = service_parts(table, out.level, row, out.col)
        extra = zeros
        if all_compiled_table is not None and np.any(fallback):
            ideal = all_compiled_table
            if not np.array_equal(ideal.shapes, table.shapes):
                raise ValueError("the all-compiled service table has other shape columns")
            irow = table_rows(ideal, big_b)[out.size]
            level = np.minimum(out.level, len(ideal.busy))
            ideal_parts = service_parts(ideal, level, irow, out.col)
            generic_total = launch + compute + memory + shared_cache
            launch, compute, memory, shared_cache = (
                np.where(fallback, i, g)
                for i, g in zip(ideal_parts, (launch, compute, memory, shared_cache), strict=True)
            )
            extra = np.where(fallback, generic_total - sum(ideal_parts), 0.0)
        names = ("hbm_bytes", "memory_bound_bytes", "spill_bytes")
        traffic = (
            *(level_stack(table, name)[out.level, row, out.col] for name in names),
            table.launches[row, out.col],
        )
    if table is None or not np.any(out.slowed):
        stretch = zeros
    else:  # only phases that ever ran slowed: elsewhere the difference is rounding noise
        alone = level_stack(table, "time_ms")[out.level, row, out.col]  # at the batch's level
        stretched = np.maximum(0.0, (out.finish - out.start) - (out.stall + alone))
        stretch = np.where(out.slowed, stretched, 0.0)
    return BatchTrace(
        start_ms=out.start,
        ready_ms=out.ready,
        memory_start_ms=out.memory_start,
        finish_ms=out.finish,
        core=out.core,
        size=out.size,
        seq_len=stream.seq_len if out.identity else columns.shapes[out.col],
        fallback=fallback,
        stall_ms=out.stall,
        launch_ms=np.asarray(launch, np.float64),
        compute_ms=np.asarray(compute, np.float64),
        memory_ms=np.asarray(memory, np.float64),
        fallback_extra_ms=np.asarray(extra, np.float64),
        busy_cores=out.level + 1,
        shared_cache_ms=np.asarray(shared_cache, np.float64),
        stretch_ms=stretch,
        hbm_bytes=np.asarray(traffic[0], np.float64),
        memory_bound_bytes=np.asarray(traffic[1], np.float64),
        spill_bytes=np.asarray(traffic[2], np.float64),
        launches=np.asarray(traffic[3], np.int64),
    )
