"""Build a `ServiceTable` from plain arrays (tests, hand-made plans, stand-ins for the
compile-plan model) and map runtime shapes to compiled buckets. Units: ms, bytes, GB/s."""

from __future__ import annotations

import numpy as np

from model.service import ServiceTable


def service_table_from_arrays(
    batch_sizes,
    shapes,
    launch_ms,
    compute_bound_ms,
    memory_bound_ms,
    memory_bound_bytes=None,
    *,
    hbm_bytes=None,
    spill_bytes=None,
    peak_hbm_gbs=None,
    launches=None,
    compiled_shapes=None,
) -> ServiceTable:
    """A ServiceTable from plain (B, S) arrays (ms, bytes), e.g. for tests or a hand-made plan.

    time_ms = launch + compute-bound + memory-bound. hbm_bytes defaults to the memory-bound
    bytes, spill to 0, peak GB/s to the memory-bound burst rate, launches to 0. Buckets come
    from `compiled_shapes` (a shape runs in the smallest bucket >= it; above the largest it
    falls back); None compiles every shape as its own bucket.
    """
    batch_sizes = np.asarray(batch_sizes, dtype=np.int64)
    shapes = np.asarray(shapes, dtype=np.int64)
    full = (len(batch_sizes), len(shapes))

    def grid(x, default=0.0):
        return np.broadcast_to(np.asarray(default if x is None else x, np.float64), full).copy()

    launch, compute, memory = grid(launch_ms), grid(compute_bound_ms), grid(memory_bound_ms)
    mem_bytes = grid(memory_bound_bytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        burst = np.where(memory > 0, mem_bytes / (memory * 1e6), 0.0)  # bytes/ms -> GB/s
    bucket, compiled, fallback = bucket_columns(shapes, compiled_shapes)
    return ServiceTable(
        batch_sizes=batch_sizes,
        shapes=shapes,
        time_ms=launch + compute + memory,
        launch_ms=launch,
        compute_bound_ms=compute,
        memory_bound_ms=memory,
        hbm_bytes=grid(mem_bytes if hbm_bytes is None else hbm_bytes),
        memory_bound_bytes=mem_bytes,
        spill_bytes=grid(spill_bytes),
        peak_hbm_gbs=grid(burst if peak_hbm_gbs is None else peak_hbm_gbs),
        launches=np.broadcast_to(np.asarray(0 if launches is None else launches), full)
        .astype(np.int64)
        .copy(),
        fallback=fallback,
        bucket=bucket,
        compiled_shape=compiled,
    )


def bucket_columns(shapes: np.ndarray, compiled_shapes) -> tuple[np.ndarray, ...]:
    """(bucket index, compiled shape, fallback flag) of each runtime shape: smallest compiled
    bucket >= shape; above the largest bucket: -1, the shape itself, True."""
    shapes = np.asarray(shapes, dtype=np.int64)
    if compiled_shapes is None:
        return np.arange(len(shapes), dtype=np.int64), shapes.copy(), np.zeros(len(shapes), bool)
    buckets = np.asarray(compiled_shapes, dtype=np.int64)
    idx = np.searchsorted(buckets, shapes)
    fallback = idx >= len(buckets)
    compiled = np.where(fallback, shapes, buckets[np.minimum(idx, len(buckets) - 1)])
    return np.where(fallback, -1, idx).astype(np.int64), compiled, fallback
