"""Service-time tables: what the compiled plan costs for every (batch size, runtime shape).

The compiler built kernels for `compiled_shapes` (ascending seq_len buckets). A runtime shape
runs in the smallest bucket >= it, *as* that bucket's shape (static shapes: a prompt or KV cache
is padded up to the bucket) with that bucket's fusion and tiles; autotuned tiles are searched
per (batch size, bucket), as a compiler that captures one graph per batch size would. Shapes
above the largest bucket take the generic path (`FallbackPolicy`): unfused, untuned default
tiles, the actual shape, and extra host dispatch per kernel. The runtime simulator charges the
one-time compile stall itself.

`build_service_table` is the one call the runtime engineer and the lead need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from model.compiler.blocks import BlockSpec
from model.compiler.fusion import fusion_groups
from model.compiler.hardware import HardwareEnvelope
from model.compiler.plan import KernelCost, KernelMemo, evaluate_plan
from model.compiler.tiles import Tile, resolve_tiles
from model.service import ServiceTable


@dataclass(frozen=True)
class FallbackPolicy:
    """The generic path a shape outside every compiled bucket takes (packet `fallback`).

    Attributes:
        compile_stall_ms: one-time JIT stall the first time a new shape is seen, ms (charged by
            the runtime simulator, not in the service table).
        dispatch_overhead_us: extra host dispatch per kernel on the generic path, us.
    """

    compile_stall_ms: float = 0.0
    dispatch_overhead_us: float = 0.0

    def __post_init__(self) -> None:
        for name in ("compile_stall_ms", "dispatch_overhead_us"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and np.isfinite(value) and value >= 0):
                raise ValueError(f"fallback.{name} must be a number >= 0, got {value!r}")


def bucket_of(compiled_shapes: Sequence[int], shapes: np.ndarray) -> np.ndarray:
    """Index of the smallest compiled bucket >= each shape; -1 above the largest (fallback)."""
    buckets = np.asarray(compiled_shapes, dtype=np.int64)
    index = np.searchsorted(buckets, np.asarray(shapes, dtype=np.int64), side="left")
    return np.where(index < len(buckets), index, -1)


def _check_axis(name: str, values: np.ndarray) -> None:
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"{name} must be a non-empty list of whole numbers")
    if np.any(values < 1) or np.any(np.diff(values) <= 0):
        raise ValueError(f"{name} must be ascending whole numbers >= 1, got {values.tolist()}")


def _totals(kernels: list[KernelCost], layers: int) -> dict[str, np.ndarray]:
    """Per-point sums over a plan's kernels, scaled to `layers` passes; times in ms."""
    launch = sum(k.launch_us + k.floor_us for k in kernels) * layers / 1e3
    compute = sum(k.compute_us for k in kernels) * layers / 1e3
    memory = sum(k.memory_us for k in kernels) * layers / 1e3
    return {
        "time_ms": launch + compute + memory,
        "launch_ms": launch,
        "compute_bound_ms": compute,
        "memory_bound_ms": memory,
        "hbm_bytes": sum(k.hbm_bytes for k in kernels) * layers,
        "memory_bound_bytes": sum(k.memory_bound_bytes for k in kernels) * layers,
        "spill_bytes": sum(k.spill_bytes for k in kernels) * layers,
        "peak_hbm_gbs": np.max(np.stack([k.peak_gbs for k in kernels]), axis=0),
        "launches": np.full(len(kernels[0].launch_us), len(kernels) * layers, dtype=np.int64),
    }


_NAMES = ("time_ms", "launch_ms", "compute_bound_ms", "memory_bound_ms", "hbm_bytes",
          "memory_bound_bytes", "spill_bytes", "peak_hbm_gbs", "launches")  # fmt: skip


@dataclass(frozen=True)
class _Axes:
    """Where each table column comes from: (B,) batch sizes, (S,) runtime shapes, the compiled
    buckets, each shape's bucket index (-1: fallback) and the buckets used."""

    batch: np.ndarray
    runtime: np.ndarray
    buckets: np.ndarray
    bucket: np.ndarray
    fallback: np.ndarray
    used: np.ndarray


def _arrays(
    block: BlockSpec,
    hardware: HardwareEnvelope,
    groups,
    explicit: Mapping[str, Tile],
    fallback: FallbackPolicy,
    axes: _Axes,
    compiled_tiles: Mapping[str, np.ndarray] | None,
    memo: KernelMemo | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The table's (B, S) arrays on `hardware`, and the compiled path's tile rows per op (to
    cost the same compiled plan again); compiled_tiles: those rows from an earlier call."""
    shape = (len(axes.batch), len(axes.runtime))
    table = {n: np.zeros(shape, dtype=np.int64 if n == "launches" else float) for n in _NAMES}
    chosen: dict[str, np.ndarray] = {}
    if len(axes.used):  # compiled path: evaluate each used bucket once per batch size
        b_grid, s_grid = np.meshgrid(axes.batch, axes.buckets[axes.used], indexing="ij")
        kernels = evaluate_plan(block, hardware, groups, explicit, b_grid.ravel(), s_grid.ravel(),
                                compiled_tiles=compiled_tiles, memo=memo)  # fmt: skip
        chosen = {op: rows for k in kernels for op, rows in k.tiles.items()}
        totals = _totals(kernels, block.layers)
        column = np.searchsorted(axes.used, axes.bucket[~axes.fallback])
        for n in _NAMES:
            table[n][:, ~axes.fallback] = totals[n].reshape(len(axes.batch), -1)[:, column]
    if axes.fallback.any():  # generic path at the actual shape (untuned tiles: nothing to keep)
        b_grid, s_grid = np.meshgrid(axes.batch, axes.runtime[axes.fallback], indexing="ij")
        kernels = evaluate_plan(
            block, hardware, fusion_groups(block, "none"), {}, b_grid.ravel(), s_grid.ravel(),
            untuned=True, dispatch_us=fallback.dispatch_overhead_us, memo=memo,
        )  # fmt: skip
        totals = _totals(kernels, block.layers)
        for n in _NAMES:
            table[n][:, axes.fallback] = totals[n].reshape(len(axes.batch), -1)
    return table, chosen


def build_service_table(
    block: BlockSpec,
    hardware: HardwareEnvelope,
    fusion: str | Sequence[Sequence[str]],
    tiles: Mapping[str, Tile | Mapping] | None,
    compiled_shapes: Sequence[int],
    fallback: FallbackPolicy,
    batch_sizes: Sequence[int],
    shapes: Sequence[int],
    *,
    memo: KernelMemo | None = None,
) -> ServiceTable:
    """The service-time table of a compiled plan (model.service.ServiceTable), one core alone,
    with `busy` tables for 2..cores busy cores when the device has several cores and a shared
    cache (the same compiled tiles, costed with the core's share of the cache).

    block, hardware: what runs where. fusion: preset name or op groups. tiles: explicit tiles
    per op (others autotuned, once, for the core alone). compiled_shapes: ascending seq_len
    buckets (may be empty: every shape falls back). fallback: the generic path. batch_sizes,
    shapes: the table's axes (ascending). Computed in one vectorized pass per path and level.
    memo: kernels kept from earlier tables (`KernelMemo`): a plan that differs from an earlier
    one in one op's tile costs only that op's kernel again (the same bits).
    """
    groups = fusion_groups(block, fusion)
    explicit = resolve_tiles(block, hardware, tiles)
    batch = np.asarray(batch_sizes, dtype=np.int64)
    runtime = np.asarray(shapes, dtype=np.int64)
    buckets = np.asarray(compiled_shapes, dtype=np.int64)
    _check_axis("batch_sizes", batch)
    _check_axis("shapes", runtime)
    if len(buckets):
        _check_axis("compiled_shapes.seq_len", buckets)

    bucket = bucket_of(buckets, runtime)
    fallback_mask = bucket < 0
    compiled_shape = np.where(
        fallback_mask, runtime, buckets[np.maximum(bucket, 0)] if len(buckets) else runtime
    )
    axes = _Axes(batch, runtime, buckets, bucket, fallback_mask, np.unique(bucket[~fallback_mask]))
    columns = {
        "batch_sizes": batch,
        "shapes": runtime,
        "fallback": fallback_mask,
        "bucket": bucket.astype(np.int64),
        "compiled_shape": compiled_shape.astype(np.int64),
    }
    alone, compiled = _arrays(block, hardware, groups, explicit, fallback, axes, None, memo)
    levels = {1: alone}
    if hardware.cores > 1 and hardware.shared_cache_mib > 0:

        def cost(busy_cores: int) -> dict[str, np.ndarray]:
            shared = hardware.with_busy_cores(busy_cores)
            return _arrays(block, shared, groups, explicit, fallback, axes, compiled, memo)[0]

        levels[hardware.cores] = cost(hardware.cores)
        _fill_levels(levels, 1, hardware.cores, cost)
    if all(_same(levels[c], alone) for c in levels):  # the plan never depends on the cache
        return ServiceTable(**alone, **columns)
    busy = tuple(ServiceTable(**levels[c], **columns) for c in range(2, hardware.cores + 1))
    return ServiceTable(**alone, **columns, busy=busy)


def _same(one: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> bool:
    return all(np.array_equal(one[n], other[n]) for n in _NAMES)


def _fill_levels(levels: dict, low: int, high: int, cost) -> None:
    """Fill levels[low + 1 .. high - 1] (busy-core counts) by bisection, costing only where
    they can differ. Every cache decision is a threshold on the core's share that flips at most
    once as the share shrinks, and each flip only adds bytes and time to its own phase: equal
    tables at two counts mean no decision flips between them, so the counts between are equal
    too. Recursion depth is log2(cores)."""
    if high - low <= 1:
        return
    if _same(levels[low], levels[high]):
        for c in range(low + 1, high):
            levels[c] = levels[low]
        return
    middle = (low + high) // 2
    levels[middle] = cost(middle)
    _fill_levels(levels, low, middle, cost)
    _fill_levels(levels, middle, high, cost)
