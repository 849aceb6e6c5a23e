"""Queue planning for the runtime simulator: shape columns, buckets, lanes and core sets.

Turns a configuration, a service table and a request stream into the integer arrays the
event loop reads: which table column each request uses, which queue (lane) it joins and
which cores serve each lane. Times in ms.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.runtime.inputs import RuntimeConfig
from model.runtime.tables import bucket_columns
from model.runtime.workload import RequestStream
from model.service import ServiceTable


@dataclass(frozen=True)
class ShapeColumns:
    """The runtime shapes a run can use and how each runs.

    Attributes:
        shapes: (S,) int64 ascending seq_len values (the service table's columns).
        fallback: (S,) bool, shape runs the generic path.
        bucket: (S,) int64 compiled bucket index, -1 on fallback.
        per_request_ms: (S,) float64 amortised cost of one request at full batch, ms (time of a
            `max_batch` batch / max_batch): the work estimate least-loaded and shape-affinity use.
    """

    shapes: np.ndarray
    fallback: np.ndarray
    bucket: np.ndarray
    per_request_ms: np.ndarray


@dataclass(frozen=True)
class QueuePlan:
    """Which queue (lane) each request joins and which cores serve each lane (see the kernel).

    Attributes:
        req_col: (N,) int32 column of each request's shape in ShapeColumns.
        req_sub: (N,) int32 sub-queue (compiled bucket, fallback last) when bucketing; a
            1-element placeholder otherwise.
        req_base: (N,) int32 base lane: the core (round-robin, random) or the affinity group;
            a 1-element placeholder for central-queue and least-loaded (decides at arrival).
        (int32: 4 bytes per request each; a run is capped far below 2**31 requests.)
        req_est_ms: (N,) float64 work estimate of each request, ms (least-loaded only; else a
            1-element placeholder).
        n_sub: number of sub-queues per base lane.
        lane_core_ptr, lane_core_idx: CSR core sets of the base lanes.
        least_loaded: placement decided at arrival by least outstanding work.
    """

    req_col: np.ndarray
    req_sub: np.ndarray
    req_base: np.ndarray
    req_est_ms: np.ndarray
    n_sub: int
    lane_core_ptr: np.ndarray
    lane_core_idx: np.ndarray
    least_loaded: bool


def shape_columns(config: RuntimeConfig, table: ServiceTable | None) -> ShapeColumns:
    """The shape columns of a run, checked against the service table when there is one."""
    values = np.asarray(config.workload.shapes.values, dtype=np.int64)
    big_b = int(config.batch_policy.max_batch)
    if table is None:
        shapes = np.unique(values)
        bucket, _, fallback = bucket_columns(shapes, config.compiled_shapes)
        return ShapeColumns(shapes, fallback, bucket, np.full(len(shapes), 0.0))
    missing = sorted(set(values.tolist()) - set(np.asarray(table.shapes).tolist()))
    if missing:
        raise ValueError(
            f"inputs.workload.shapes.seq_len value {missing[0]} is not a column of the service table"
        )
    rows = table_rows(table, big_b)
    return ShapeColumns(
        shapes=np.asarray(table.shapes, dtype=np.int64),
        fallback=np.asarray(table.fallback, dtype=bool),
        bucket=np.asarray(table.bucket, dtype=np.int64),
        per_request_ms=np.asarray(table.time_ms, np.float64)[rows[big_b]] / big_b,
    )


def table_rows(table: ServiceTable, max_batch: int) -> np.ndarray:
    """(max_batch + 1,) table row of each batch size 1..max_batch (entry 0 unused)."""
    sizes = np.asarray(table.batch_sizes)
    for size in range(1, max_batch + 1):
        if size not in sizes:
            raise ValueError(
                f"the service table has no row for batch size {size} "
                f"(batch_policy.max_batch = {max_batch})"
            )
    return np.concatenate([[0], table.batch_index(np.arange(1, max_batch + 1))]).astype(np.int64)


def affinity_core_sets(group_work: np.ndarray, cores: int) -> list[np.ndarray]:
    """Cores pinned to each shape-affinity group, in proportion to the group's expected work.

    With at least as many cores as groups every group gets >= 1 core and the rest go by largest
    remainder of work share (contiguous core ranges, in group order). With more groups than
    cores each group gets one core, heaviest groups first onto the least-loaded core (LPT).
    """
    work = np.asarray(group_work, dtype=np.float64)
    g = len(work)
    share = work / work.sum() if work.sum() > 0 else np.full(g, 1.0 / g)
    if g > cores:
        load = np.zeros(cores)
        owner = np.zeros(g, dtype=np.int64)
        for grp in np.argsort(-share, kind="stable"):  # LPT: one decision per group
            owner[grp] = int(np.argmin(load))
            load[owner[grp]] += share[grp]
        return [np.array([owner[grp]], dtype=np.int64) for grp in range(g)]
    target = share * cores
    count = np.maximum(1, np.floor(target)).astype(np.int64)
    while count.sum() < cores:  # hand out the rest by largest remainder, one core at a time
        count[int(np.argmax(target - count))] += 1
    while count.sum() > cores:  # floor(1) minimums overshot: take back where least deserved
        spare = np.where(count > 1, target - count, np.inf)
        count[int(np.argmin(spare))] -= 1
    ends = np.cumsum(count)
    return [np.arange(e - c, e, dtype=np.int64) for c, e in zip(count, ends, strict=True)]


def _affinity_lanes(config, columns, group_of_col, req_col):
    """(base lane per request, core sets) for shape-affinity: one lane per group with weight
    in the shape mix, sized by the group's expected work (mix weight x amortised cost)."""
    value_cols = np.searchsorted(columns.shapes, np.asarray(config.workload.shapes.values))
    weights = np.asarray(config.workload.shapes.weights, np.float64)
    if config.service.source != "distribution":  # pinned: every shape costs the same
        weights = weights * columns.per_request_ms[value_cols]
    groups = group_of_col[value_cols]
    work = np.bincount(groups, weights=weights, minlength=int(group_of_col.max()) + 1)
    present = np.unique(groups[np.asarray(config.workload.shapes.weights) > 0])
    base = np.searchsorted(present, group_of_col)[req_col].astype(np.int32)
    return base, affinity_core_sets(work[present], int(config.hardware.cores))


def request_columns(columns: ShapeColumns, stream: RequestStream) -> np.ndarray:
    """(N,) int32 column of each request's shape in `columns` (`QueuePlan.req_col`)."""
    return np.searchsorted(columns.shapes, stream.seq_len).astype(np.int32)


def plan_queues(
    config: RuntimeConfig,
    columns: ShapeColumns,
    stream: RequestStream,
    *,
    req_col: np.ndarray | None = None,
) -> QueuePlan:
    """Assign every request to its lane (or, for least-loaded, its sub-queue and estimate).
    `req_col`: `request_columns(columns, stream)` when the caller has it (runs of one stream
    over tables with the same shapes share it: a search of every request, ~0.25 ms a 20,000-
    request run)."""
    cores = int(config.hardware.cores)
    if req_col is None:
        req_col = request_columns(columns, stream)
    n_buckets = int(columns.bucket.max()) + 1 if len(columns.bucket) else 0
    group_of_col = np.where(columns.fallback, n_buckets, columns.bucket)  # fallback group last
    placeholder = np.zeros(1, np.int32)  # the kernels skip arrays that cannot matter
    if config.batch_policy.bucketing:
        req_sub, n_sub = group_of_col.astype(np.int32)[req_col], n_buckets + 1
    else:
        req_sub, n_sub = placeholder, 1
    big_b = int(config.batch_policy.max_batch)
    if config.placement != "least-loaded":
        est = np.zeros(1)
    elif config.service.source == "distribution":
        overhead = config.fallback.dispatch_overhead_us / 1000.0
        est = (stream.service_draw_ms + np.where(columns.fallback[req_col], overhead, 0.0)) / big_b
    else:
        est = columns.per_request_ms[req_col]

    placement = config.placement
    all_cores = np.arange(cores, dtype=np.int64)
    if placement == "central-queue":
        base, sets = placeholder, [all_cores]
    elif placement == "shape-affinity":
        base, sets = _affinity_lanes(config, columns, group_of_col, req_col)
    else:
        if placement == "round-robin":
            base = np.arange(len(req_col), dtype=np.int32) % np.int32(cores)
        elif placement == "random":
            base = stream.placement_draw % cores
        else:  # least-loaded decides at arrival
            base = placeholder
        sets = [np.array([k], dtype=np.int64) for k in range(cores)]
    ptr = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
    return QueuePlan(
        req_col=req_col,
        req_sub=np.ascontiguousarray(req_sub, dtype=np.int32),
        req_base=np.ascontiguousarray(base, dtype=np.int32),
        req_est_ms=np.ascontiguousarray(est, dtype=np.float64),
        n_sub=int(n_sub),
        lane_core_ptr=ptr,
        lane_core_idx=np.concatenate(sets).astype(np.int64),
        least_loaded=placement == "least-loaded",
    )
