"""The service-time table: the contract between the compile-plan model and the runtime simulator.

The compile-plan model fills one table per (block, hardware, fusion plan, tile plan, compiled
shapes, fallback policy); the runtime simulator only reads it. Every array is indexed
[batch_index, shape_index] where `batch_sizes[batch_index]` requests run together, all padded
to runtime shape `shapes[shape_index]` (the batch's largest shape).

Units: milliseconds for times, bytes for traffic, GB/s (1e9 bytes/s) for rates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ServiceTable:
    """Time and HBM traffic to run one batch on one core, with the core alone on the device.

    Attributes:
        batch_sizes: (B,) int64, ascending batch sizes, normally 1..max_batch.
        shapes: (S,) int64, ascending runtime shape values (e.g. seq_len) the workload can draw.
        time_ms: (B, S) service time of one batch on an otherwise idle device, ms.
            Equals launch_ms + compute_bound_ms + memory_bound_ms.
        launch_ms: (B, S) host launch overhead plus device minimum-kernel floor, summed over the
            batch's kernels, ms. Does not stretch under HBM contention.
        compute_bound_ms: (B, S) time in kernels whose compute time exceeds their memory time, ms.
            Does not stretch under HBM contention.
        memory_bound_ms: (B, S) time in kernels limited by HBM bandwidth (including spill
            traffic), ms. Stretches when concurrent HBM demand exceeds the device's bandwidth.
        hbm_bytes: (B, S) bytes read from and written to HBM by the whole batch.
        memory_bound_bytes: (B, S) the part of hbm_bytes moved by memory-bound kernels: spread
            over memory_bound_ms it gives the burst demand rate that contends for HBM.
        spill_bytes: (B, S) the part of hbm_bytes caused by fused working sets or tiles that
            overflow on-chip SRAM (0 where everything fits).
        peak_hbm_gbs: (B, S) highest demand rate of any single kernel in the batch, GB/s.
        launches: (B, S) int64, kernels launched per batch.
        fallback: (S,) bool, True where the shape is outside every compiled bucket and runs the
            generic (unfused, untuned) path.
        bucket: (S,) int64, index of the compiled shape bucket a runtime shape runs in, -1 when
            it falls back.
        compiled_shape: (S,) int64, the compiled bucket's shape a runtime shape runs as
            (equal to the shape itself on the fallback path).
        busy: tables of the same compiled plan (same kernels and tiles) when 2, 3, ... cores
            run at once, busy[i] for i + 2 busy cores (this one included). Each busy core then
            holds a smaller share of the shared cache, so data re-read through it alone may
            come from HBM (model/compiler/README.md "Shared cache"). Empty where it makes no
            difference to the caller (one core, no shared cache): the table holds for any
            number of busy cores. Nested tables have no `busy` of their own.
    """

    batch_sizes: np.ndarray
    shapes: np.ndarray
    time_ms: np.ndarray
    launch_ms: np.ndarray
    compute_bound_ms: np.ndarray
    memory_bound_ms: np.ndarray
    hbm_bytes: np.ndarray
    memory_bound_bytes: np.ndarray
    spill_bytes: np.ndarray
    peak_hbm_gbs: np.ndarray
    launches: np.ndarray
    fallback: np.ndarray
    bucket: np.ndarray
    compiled_shape: np.ndarray
    busy: tuple[ServiceTable, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        b, s = len(self.batch_sizes), len(self.shapes)
        for name in (
            "time_ms",
            "launch_ms",
            "compute_bound_ms",
            "memory_bound_ms",
            "hbm_bytes",
            "memory_bound_bytes",
            "spill_bytes",
            "peak_hbm_gbs",
            "launches",
        ):
            shape = np.shape(getattr(self, name))
            if shape != (b, s):
                raise ValueError(f"ServiceTable.{name} has shape {shape}, expected {(b, s)}")
        for name in ("fallback", "bucket", "compiled_shape"):
            shape = np.shape(getattr(self, name))
            if shape != (s,):
                raise ValueError(f"ServiceTable.{name} has shape {shape}, expected {(s,)}")
        for i, other in enumerate(self.busy):
            if other.busy or not (
                np.array_equal(other.batch_sizes, self.batch_sizes)
                and np.array_equal(other.shapes, self.shapes)
                and np.array_equal(other.launches, self.launches)
            ):
                raise ValueError(
                    f"ServiceTable.busy[{i}] must have this table's batch sizes, shapes and "
                    "launches, and no busy tables of its own"
                )

    def for_busy_cores(self, busy_cores: int) -> ServiceTable:
        """The table when `busy_cores` cores (this one included) run at once: this table for 1,
        busy[busy_cores - 2] above (the last one computed for more cores than that)."""
        if busy_cores < 1:
            raise ValueError(f"busy_cores must be >= 1 (got {busy_cores})")
        if busy_cores == 1 or not self.busy:
            return self
        return self.busy[min(busy_cores, len(self.busy) + 1) - 2]

    def batch_index(self, batch_size: np.ndarray) -> np.ndarray:
        """Row index for each batch size (batch sizes not in the table raise)."""
        idx = np.searchsorted(self.batch_sizes, batch_size)
        if np.any(idx >= len(self.batch_sizes)) or np.any(
            self.batch_sizes[np.minimum(idx, len(self.batch_sizes) - 1)] != batch_size
        ):
            raise ValueError("batch size not in the service table")
        return idx

    def shape_index(self, shape: np.ndarray) -> np.ndarray:
        """Column index for each runtime shape value (values not in the table raise)."""
        idx = np.searchsorted(self.shapes, shape)
        if np.any(idx >= len(self.shapes)) or np.any(
            self.shapes[np.minimum(idx, len(self.shapes) - 1)] != shape
        ):
            raise ValueError("shape not in the service table")
        return idx
