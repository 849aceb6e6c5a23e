"""Work that travels light: model runs packed into chunks for any `concurrent.futures.Executor`.

Sweeps, the validation matrix and the search all run through `run_points`. A `Point` is what
one run needs and nothing more: the runtime configuration (seed included) and a `PlanSpec`, the
arguments of the compile-plan model, not its arrays. The process that runs a chunk builds each
distinct service table once and draws each distinct request stream from its seed once (caches
per process, shared by its threads), so what crosses the wire to a Dask worker is 1-2 KB a point
pickled (plus an arrival trace, for trace-driven packets; Dask pickles with cloudpickle, as the
hardware envelope holds a read-only mapping), and what comes back is one
row of headline figures. Rows come back in point order, identical to a run in one process:
each depends only on its configuration, plan and seed. A process that runs a chunk keeps its
freed heap for the next point's arrays (tune_allocator: a Dask worker's nanny-set malloc
trim threshold would map and unmap them every point).

A `ServingPoint` is the same for a serving packet's continuous scheduler: its `ServingConfig`
(seed, lengths, policy) and an `IterationPlan` (triage/serving_scenario.py), the arguments of
the iteration table; its row is `serving_row` of the summary `workbench run --json` prints, so
a sweep point or matrix cell at a packet's own settings has exactly the run's figures.

The default executor is a local thread pool (the numba kernel releases the GIL); `--scheduler`
passes a Dask `Client.get_executor()` instead (workbench/core/cluster.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import math
import os
import platform
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from model.compiler.blocks import BlockSpec
from model.compiler.hardware import HardwareEnvelope
from model.compiler.service_table import FallbackPolicy, build_service_table
from model.runtime.inputs import RuntimeConfig
from model.runtime.serving import ServingConfig, simulate_serving
from model.runtime.serving_summary import serving_summary
from model.runtime.simulate import simulate
from model.runtime.stats import headline
from model.runtime.sweep import headline_row
from model.runtime.workload import RequestStream, generate_requests
from model.service import ServiceTable
from packets.model_specs import fusion_spec, tile_spec
from triage.serving_scenario import IterationPlan, serving_row

if TYPE_CHECKING:
    from triage.scenario import Scenario

CHUNK_TARGET_S = 1.0
"""Seconds of work per chunk: a Dask task costs ~1 ms of scheduling and a round trip, so a
chunk of about a second keeps that overhead near 0.1% (NOTES.md: tasks under ~10 ms gain
nothing from a cluster)."""

SERVING_SECONDS_PER_REQUEST = 5e-6
"""CPU cost of one simulated request of the continuous scheduler, summary included: about 0.1 s
per 20,000-request point of the llm-serving-continuous example (5-8 iterations per request) on
this project's 2-core machines (BENCHMARKS.md "Serving sweeps"). Only sizes chunks."""

SECONDS_PER_REQUEST = 7.5e-7
"""CPU cost of one simulated request in a sweep point: about 15 ms per 20,000-request point of
the default example on this project's 2-core machines (BENCHMARKS.md "Sweeps on a cluster",
CPU per point). Only sizes chunks; no result depends on it."""

CHUNKS_PER_WORKER = 4
"""At least this many chunks per worker thread, so a slow worker does not hold up the tail
and progress moves."""

STREAM_CACHE = 16
"""Request streams kept per process (a 20,000-request stream is ~0.5 MB)."""


MALLOC_MMAP_THRESHOLD = 32 * 1024 * 1024
"""Bytes from which glibc's malloc serves a block by mmap (mallopt M_MMAP_THRESHOLD): 32 MiB,
glibc's own ceiling for it on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX, mallopt(3)). A point's arrays
(a 20,000-request stream: 160 KB per float64 column) then come from the heap and are reused
point after point, instead of a fresh mmap, zero-filled page faults and a munmap each."""

MALLOC_TRIM_THRESHOLD = 2 * MALLOC_MMAP_THRESHOLD
"""Free bytes at the top of the heap before glibc gives them back (M_TRIM_THRESHOLD): twice
the mmap threshold, the ratio glibc's dynamic rule keeps (mallopt(3)). Dask's nanny starts
workers with MALLOC_TRIM_THRESHOLD_=65536 (`distributed.nanny.pre-spawn-environ`), which also
freezes the mmap threshold at 128 KiB: there every point's arrays were mapped and unmapped
again, +35% page faults and +10-17% CPU per point (BENCHMARKS.md "Sweeps on a cluster"). At
most this much freed memory stays with a process that runs chunks."""

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
"""mallopt parameter numbers (glibc malloc.h)."""

_allocator_once = threading.Lock()
_allocator_set: list[bool] = []


def tune_allocator() -> bool:
    """Set MALLOC_MMAP_THRESHOLD and MALLOC_TRIM_THRESHOLD in this process, once (glibc only;
    elsewhere nothing). True when both were set, now or before."""
    with _allocator_once:
        if not _allocator_set:
            _allocator_set.append(_mallopt())
        return _allocator_set[0]


def _mallopt() -> bool:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    mmap = libc.mallopt(_M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD)
    trim = libc.mallopt(_M_TRIM_THRESHOLD, MALLOC_TRIM_THRESHOLD)
    return mmap == 1 and trim == 1


class Cancelled(Exception):
    """The run was cancelled between chunks."""


def _freeze(value: Any) -> Any:
    """Nested lists/dicts as tuples, so a plan can be hashed and cached."""
    if isinstance(value, Mapping):
        return tuple((k, _freeze(v)) for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


@dataclass(frozen=True)
class PlanSpec:
    """The compile-plan model's inputs for one service table (hashable; about 1 KB pickled).

    Attributes:
        block, hardware: what runs where.
        fusion: preset name, or op groups as tuples.
        tiles: ((op, ((field, value), ...)), ...) explicit tiles; other ops autotuned.
        compiled: ascending compiled seq_len buckets.
        fallback: the generic path's costs.
        batch_sizes, shapes: the table's axes (ascending).
    """

    block: BlockSpec
    hardware: HardwareEnvelope
    fusion: str | tuple[tuple[str, ...], ...]
    tiles: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
    compiled: tuple[int, ...]
    fallback: FallbackPolicy
    batch_sizes: tuple[int, ...]
    shapes: tuple[int, ...]

    def build(self) -> ServiceTable:
        """The service table (model.compiler.service_table.build_service_table)."""
        fusion = self.fusion if isinstance(self.fusion, str) else [list(g) for g in self.fusion]
        return build_service_table(
            self.block,
            self.hardware,
            fusion,
            {op: dict(fields) for op, fields in self.tiles},
            list(self.compiled),
            self.fallback,
            list(self.batch_sizes),
            list(self.shapes),
        )


def plan_of(scenario: Scenario, batch_sizes: Sequence[int] | None = None) -> PlanSpec | None:
    """The plan a scenario's service table is built from (None for a pinned distribution);
    `batch_sizes` default to 1..max_batch, as `Scenario.service_table`."""
    if not scenario.uses_model:
        return None
    sizes = batch_sizes or range(1, scenario.config.batch_policy.max_batch + 1)
    return PlanSpec(
        block=scenario.block,
        hardware=scenario.hardware,
        fusion=_freeze(fusion_spec(scenario.config)),
        tiles=_freeze(tile_spec(scenario.config)),
        compiled=tuple(scenario.config.compiled_shapes.seq_len),
        fallback=scenario.fallback_policy,
        batch_sizes=tuple(int(b) for b in sizes),
        shapes=tuple(sorted(scenario.runtime.workload.shapes.values)),
    )


@dataclass(frozen=True)
class Point:
    """One run: its configuration, its plan (None: pinned distribution) and the label columns
    its row starts with."""

    runtime: RuntimeConfig
    plan: PlanSpec | None
    labels: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class ServingPoint:
    """One run of the continuous scheduler: its configuration, its iteration plan (None:
    pinned distribution) and the label columns its row starts with."""

    serving: ServingConfig
    plan: IterationPlan | None
    labels: tuple[tuple[str, Any], ...] = ()

    @property
    def requests(self) -> int:
        return int(self.serving.workload.requests)


class _Cache:
    """Per-process caches of service and iteration tables (every distinct plan) and request
    streams (LRU)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables: dict[PlanSpec | IterationPlan, Any] = {}
        self.streams: OrderedDict[tuple, RequestStream] = OrderedDict()
        self.tables_built = 0

    def table(self, plan: PlanSpec | IterationPlan):
        with self.lock:
            found = self.tables.get(plan)
        if found is not None:
            return found
        table = plan.build()
        with self.lock:
            if plan not in self.tables:
                self.tables[plan] = table
                self.tables_built += 1
            return self.tables[plan]

    def stream(self, cfg: RuntimeConfig) -> RequestStream:
        trace = cfg.workload.arrivals.trace_ms
        digest = None if trace is None else hashlib.sha256(memoryview(trace).tobytes()).digest()
        key = (cfg.workload, cfg.service, cfg.seed, digest)
        with self.lock:
            if key in self.streams:
                self.streams.move_to_end(key)
                return self.streams[key]
        stream = generate_requests(cfg.workload, cfg.service, cfg.seed)
        with self.lock:
            self.streams[key] = stream
            while len(self.streams) > STREAM_CACHE:
                self.streams.popitem(last=False)
        return stream


_CACHE = _Cache()


def tables_built() -> int:
    """Service tables this process has built for chunks so far (tests check reuse)."""
    return _CACHE.tables_built


def run_point(point: Point | ServingPoint) -> dict:
    """One run's row: its labels, then headline figures (ms, per s, ratios)."""
    if isinstance(point, ServingPoint):
        return run_serving_point(point)
    table = _CACHE.table(point.plan) if point.plan is not None else None
    result = simulate(point.runtime, table, stream=_CACHE.stream(point.runtime))
    return {**dict(point.labels), **headline_row(headline(result))}


def run_serving_point(point: ServingPoint) -> dict:
    """A serving run's row: its labels, then `serving_row` of its summary."""
    table = _CACHE.table(point.plan) if point.plan is not None else None
    result = simulate_serving(point.serving, table)
    return {**dict(point.labels), **serving_row(serving_summary(result, table))}


def run_chunk(points: Sequence[Point | ServingPoint]) -> list[dict]:
    """Run a chunk of points in order (the task a worker receives); the process's allocator
    is tuned first (tune_allocator), on a Dask worker as here."""
    tune_allocator()
    return [run_point(p) for p in points]


def _cost_s(point: Point | ServingPoint) -> float:
    """Estimated CPU seconds of one point (sizes chunks only)."""
    if isinstance(point, ServingPoint):
        return point.requests * SERVING_SECONDS_PER_REQUEST
    return point.runtime.workload.requests * SECONDS_PER_REQUEST


def chunk_size(points: Sequence[Point | ServingPoint], parallelism: int) -> int:
    """Points per chunk: about CHUNK_TARGET_S of work, but at least CHUNKS_PER_WORKER chunks
    per worker thread when there are enough points."""
    if not points:
        return 1
    by_cost = max(1, math.floor(CHUNK_TARGET_S / max(_cost_s(p) for p in points)))
    spread = max(1, math.ceil(len(points) / (CHUNKS_PER_WORKER * max(1, parallelism))))
    return min(by_cost, spread)


def default_parallelism() -> int:
    """Threads of the default local pool: the CPU count."""
    return os.cpu_count() or 1


def run_points(
    points: Sequence[Point | ServingPoint],
    executor: Executor | None = None,
    *,
    parallelism: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
    chunk: int | None = None,
) -> list[dict]:
    """Run every point on `executor` (default: a local thread pool) in chunks; rows in order.

    Args:
        parallelism: worker threads behind the executor (sizes chunks; default CPU count).
        progress: called with (0, total) at the start, then (points done, total) as chunks
            finish, in order.
        cancelled: checked as chunks finish; when true, the rest is cancelled and Cancelled
            raised.
        chunk: points per chunk (default: chunk_size).
    """
    points = list(points)
    if not points:
        return []
    size = chunk or chunk_size(points, parallelism or default_parallelism())
    chunks = [points[i : i + size] for i in range(0, len(points), size)]
    if executor is None:
        with ThreadPoolExecutor(max_workers=parallelism or default_parallelism()) as pool:
            return _collect(pool, chunks, len(points), progress, cancelled)
    return _collect(executor, chunks, len(points), progress, cancelled)


def _collect(executor, chunks, total, progress, cancelled) -> list[dict]:
    futures: list[Future] = [executor.submit(run_chunk, c) for c in chunks]
    rows: list[dict] = []
    if progress is not None:
        progress(0, total)
    try:
        for future in futures:
            if cancelled is not None and cancelled():
                raise Cancelled(f"cancelled after {len(rows)} of {total} runs")
            rows += future.result()
            if progress is not None:
                progress(len(rows), total)
    finally:
        for future in futures:
            future.cancel()
    return rows
