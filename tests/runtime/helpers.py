"""Shared builders for runtime tests: configurations and small service tables from arrays."""

from __future__ import annotations

import dataclasses

import numpy as np

from benchmarks.synthetic_decode import decode_table
from model.runtime.inputs import (
    Arrivals,
    BatchPolicy,
    Fallback,
    RuntimeConfig,
    RuntimeHardware,
    ServiceSpec,
    ShapeMix,
    Workload,
)
from model.runtime.tables import service_table_from_arrays
from model.runtime.validation import poisson_pinned


def pinned_config(**kwargs) -> RuntimeConfig:
    """One-shape Poisson workload with pinned-distribution service (see poisson_pinned)."""
    return poisson_pinned(**kwargs)


def random_table(rng: np.random.Generator, max_batch: int, shapes, compiled_shapes=None):
    """A service table with positive random parts that grow with batch size and shape (ms,
    bytes), so padding and batching have visible costs."""
    sizes = np.arange(1, max_batch + 1)
    b = sizes[:, None].astype(float)
    s = np.asarray(shapes, dtype=float)[None, :] / max(shapes)
    launch = rng.uniform(0.05, 0.3) + 0 * b * s
    compute = rng.uniform(0.05, 0.5) * b * s
    memory = rng.uniform(0.2, 1.0) * (1 + 0.2 * b) * (0.5 + s)
    rate = rng.uniform(100e6, 400e6)  # bytes per ms (100-400 GB/s)
    return service_table_from_arrays(
        sizes,
        shapes,
        launch,
        compute,
        memory,
        memory * rate,
        launches=(10 * b + 0 * s).astype(int),
        compiled_shapes=compiled_shapes,
    )


def with_busy_levels(table, rng: np.random.Generator, levels: int):
    """`table` plus `levels` busy-core tables (2, 3, ... cores busy) whose memory-bound time
    and bytes grow with the busy count, as a shrinking share of the shared cache makes them:
    each level moves a random 0-30% more bytes than the one before at the same burst rate."""
    busy, memory, moved = [], table.memory_bound_ms, table.memory_bound_bytes
    for _ in range(levels):
        grow = 1.0 + rng.uniform(0.0, 0.3)
        memory, moved = memory * grow, moved * grow
        parts = (table.launch_ms, table.compute_bound_ms, memory, moved)
        busy.append(
            service_table_from_arrays(
                table.batch_sizes, table.shapes, *parts, launches=table.launches
            )
        )
    return dataclasses.replace(table, busy=tuple(busy))


def table_config(
    table,
    *,
    cores: int,
    rate_per_s: float,
    weights,
    requests: int,
    seed: int,
    placement: str = "central-queue",
    max_batch: int = 1,
    max_queue_delay_ms: float = 0.0,
    bucketing: bool = False,
    hbm_gbs: float = 1000.0,
    stall_ms: float = 0.0,
    contention: bool = True,
    arrivals: Arrivals | None = None,
    warmup_fraction: float = 0.1,
) -> RuntimeConfig:
    """A configuration whose service comes from `table` and whose shapes are its columns."""
    return RuntimeConfig(
        workload=Workload(
            arrivals or Arrivals("poisson", rate_per_s=rate_per_s),
            ShapeMix(tuple(int(v) for v in table.shapes), tuple(weights)),
            requests,
            warmup_fraction,
        ),
        hardware=RuntimeHardware(cores=cores, hbm_gbs=hbm_gbs),
        batch_policy=BatchPolicy(max_batch, max_queue_delay_ms, bucketing),
        placement=placement,
        service=ServiceSpec("model"),
        fallback=Fallback(compile_stall_ms=stall_ms),
        seed=seed,
        contention=contention,
    )


def decode_config(**changes):
    """The synthetic decode example: 8 cores, batching, a fallback shape, contention."""
    cfg = table_config(
        decode_table("none"),
        cores=8,
        rate_per_s=600.0,
        weights=(4, 3, 2, 1),
        requests=6000,
        seed=7,
        placement="round-robin",
        max_batch=8,
        max_queue_delay_ms=5.0,
        hbm_gbs=1600.0,
        stall_ms=400.0,
        warmup_fraction=0.05,
    )
    return dataclasses.replace(cfg, **changes)
