"""Inputs of the runtime simulator: plain frozen dataclasses named after the packet's fields.

The packet loader (in `packets/`) builds these from YAML; the runtime only reads them. Every
check raises `ValueError` with one line naming the packet field that is wrong, so the CLI can
print it as is. Units: ms for times, requests/s for rates, GB/s (1e9 bytes/s) for bandwidth.
Numpy is imported only to check a trace (a packet check builds a `ServiceSpec` before `workbench
open` paints its first frame, and numpy is a fifth of that start-up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

PLACEMENTS = ("central-queue", "round-robin", "random", "least-loaded", "shape-affinity")
ARRIVAL_PROCESSES = ("poisson", "gamma", "trace")
SERVICE_SOURCES = ("model", "distribution")
SERVICE_DISTS = ("exponential", "deterministic", "lognormal")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


@dataclass(frozen=True)
class Arrivals:
    """How requests arrive (`inputs.workload.arrivals`).

    Attributes:
        process: `poisson` (exponential gaps), `gamma` (gamma gaps with coefficient of
            variation `cv`: cv > 1 gives bursts, cv < 1 smoother than Poisson) or `trace`.
        rate_per_s: mean arrival rate, requests per second. Required for poisson and gamma; for
            a trace it is optional and, when given, rescales the trace's times so its mean rate
            equals this (so load sweeps work on traces too).
        cv: coefficient of variation of the gaps between arrivals (gamma only), > 0.
        trace_ms: arrival times of a trace, ms, non-decreasing (files are read by
            `packets.trace.read_trace`).
    """

    process: str = "poisson"
    rate_per_s: float | None = None
    cv: float = 1.0
    trace_ms: np.ndarray | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        p = "inputs.workload.arrivals"
        _require(
            self.process in ARRIVAL_PROCESSES,
            f"{p}.process must be one of {', '.join(ARRIVAL_PROCESSES)} (got {self.process!r})",
        )
        if self.process in ("poisson", "gamma") or self.rate_per_s is not None:
            _require(
                _finite(self.rate_per_s) and self.rate_per_s > 0,
                f"{p}.rate_per_s must be a number > 0 (got {self.rate_per_s!r})",
            )
        if self.process == "gamma":
            _require(_finite(self.cv) and self.cv > 0, f"{p}.cv must be > 0 (got {self.cv!r})")
        if self.process == "trace":
            _require(self.trace_ms is not None, f"{p}.trace is required when process is trace")
            import numpy as np  # only a trace needs it (see the module docstring)

            t = np.asarray(self.trace_ms, dtype=np.float64)
            _require(t.ndim == 1 and len(t) >= 2, f"{p}.trace needs at least 2 arrival times")
            _require(bool(np.all(np.isfinite(t))), f"{p}.trace has a non-finite arrival time")
            _require(bool(np.all(t >= 0)), f"{p}.trace has a negative arrival time")
            _require(bool(np.all(np.diff(t) >= 0)), f"{p}.trace arrival times must not decrease")
            _require(t[-1] > t[0], f"{p}.trace spans no time (all arrivals at {t[0]} ms)")


@dataclass(frozen=True)
class ShapeMix:
    """Runtime shapes the workload draws (`inputs.workload.shapes.seq_len`).

    Attributes:
        values: seq_len values (tokens), positive integers.
        weights: relative draw weights, same length, >= 0, not all zero (normalised here).
    """

    values: tuple[int, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        p = "inputs.workload.shapes.seq_len"
        _require(len(self.values) > 0, f"{p}.values must not be empty")
        _require(
            len(self.weights) == len(self.values),
            f"{p}.weights has {len(self.weights)} entries, values has {len(self.values)}",
        )
        _require(all(int(v) > 0 for v in self.values), f"{p}.values must be positive integers")
        _require(len(set(self.values)) == len(self.values), f"{p}.values has duplicates")
        _require(
            all(_finite(w) and w >= 0 for w in self.weights) and sum(self.weights) > 0,
            f"{p}.weights must be >= 0 and not all zero",
        )


@dataclass(frozen=True)
class Workload:
    """The request stream (`inputs.workload`).

    Attributes:
        arrivals: the arrival process.
        shapes: the seq_len mix each request draws from.
        requests: number of requests to simulate, >= 1.
        warmup_fraction: leading fraction of requests (by arrival) left out of statistics,
            in [0, 1).
    """

    arrivals: Arrivals
    shapes: ShapeMix
    requests: int
    warmup_fraction: float = 0.1

    def __post_init__(self) -> None:
        p = "inputs.workload"
        _require(int(self.requests) >= 1, f"{p}.requests must be >= 1 (got {self.requests!r})")
        _require(
            _finite(self.warmup_fraction) and 0 <= self.warmup_fraction < 1,
            f"{p}.warmup_fraction must be in [0, 1) (got {self.warmup_fraction!r})",
        )


@dataclass(frozen=True)
class SLA:
    """Service-level targets (`inputs.sla`); None means no target.

    Attributes:
        p95_ms, p99_ms: latency percentiles the run must not exceed, ms.
        min_throughput_per_s: completions per second the run must reach.
    """

    p95_ms: float | None = None
    p99_ms: float | None = None
    min_throughput_per_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("p95_ms", "p99_ms", "min_throughput_per_s"):
            v = getattr(self, name)
            _require(
                v is None or (_finite(v) and v > 0),
                f"inputs.sla.{name} must be a number > 0 (got {v!r})",
            )


@dataclass(frozen=True)
class BatchPolicy:
    """Dynamic batching with Triton semantics (`batch_policy`).

    A batch is dispatched when it holds `max_batch` requests or its oldest request has waited
    `max_queue_delay_ms`, whichever comes first, and only when a core is free for it.

    Attributes:
        max_batch: largest batch, >= 1.
        max_queue_delay_ms: batching timer from the oldest queued request, ms, >= 0.
        bucketing: if True a batch only holds requests of one compiled shape bucket.
    """

    max_batch: int = 1
    max_queue_delay_ms: float = 0.0
    bucketing: bool = False

    def __post_init__(self) -> None:
        _require(
            int(self.max_batch) >= 1,
            f"batch_policy.max_batch must be >= 1 (got {self.max_batch!r})",
        )
        _require(
            _finite(self.max_queue_delay_ms) and self.max_queue_delay_ms >= 0,
            f"batch_policy.max_queue_delay_ms must be a finite number >= 0 "
            f"(got {self.max_queue_delay_ms!r})",
        )


@dataclass(frozen=True)
class ServiceSpec:
    """Where service times come from (`service`).

    `source: model` reads the compile-plan model's `ServiceTable`. `source: distribution` pins
    the time of one *batch* (whatever its size: see model/runtime/README.md) to a distribution:
    `exponential` (mean_ms), `deterministic` (mean_ms) or `lognormal` (mean_ms, cv).

    Attributes:
        source: `model` or `distribution`.
        dist: the distribution's name (distribution only).
        mean_ms: mean service time of one batch, ms, > 0 (distribution only).
        cv: coefficient of variation, > 0 (lognormal only).
    """

    source: str = "model"
    dist: str | None = None
    mean_ms: float | None = None
    cv: float | None = None

    def __post_init__(self) -> None:
        _require(
            self.source in SERVICE_SOURCES,
            f"service.source must be one of {', '.join(SERVICE_SOURCES)} (got {self.source!r})",
        )
        if self.source != "distribution":
            return
        _require(
            self.dist in SERVICE_DISTS,
            f"service.dist must be one of {', '.join(SERVICE_DISTS)} (got {self.dist!r})",
        )
        _require(
            _finite(self.mean_ms) and self.mean_ms > 0,
            f"service.mean_ms must be a number > 0 (got {self.mean_ms!r})",
        )
        if self.dist == "lognormal":
            _require(
                _finite(self.cv) and self.cv > 0,
                f"service.cv must be > 0 for lognormal (got {self.cv!r})",
            )


@dataclass(frozen=True)
class Fallback:
    """The generic path for shapes outside every compiled bucket (`fallback`).

    Attributes:
        compile_stall_ms: one-time stall the first batch of each new fallback shape pays (a
            JIT compile), ms; later batches of that shape dispatched before the compile ends
            wait for it. >= 0.
        dispatch_overhead_us: extra host dispatch per fallback batch, us. With a model
            service table it is already inside the table's generic-path times; with a pinned
            distribution it is added to each fallback batch. >= 0.
    """

    compile_stall_ms: float = 0.0
    dispatch_overhead_us: float = 0.0

    def __post_init__(self) -> None:
        for name in ("compile_stall_ms", "dispatch_overhead_us"):
            v = getattr(self, name)
            _require(_finite(v) and v >= 0, f"fallback.{name} must be >= 0 (got {v!r})")


@dataclass(frozen=True)
class RuntimeHardware:
    """The part of the hardware envelope the runtime needs.

    Attributes:
        cores: placement targets (cores or partitions), >= 1.
        hbm_gbs: device HBM bandwidth shared by all cores, GB/s (1e9 bytes/s), > 0.
    """

    cores: int
    hbm_gbs: float

    def __post_init__(self) -> None:
        _require(int(self.cores) >= 1, f"hardware.cores must be >= 1 (got {self.cores!r})")
        _require(
            _finite(self.hbm_gbs) and self.hbm_gbs > 0,
            f"hardware.hbm_gbs must be a number > 0 (got {self.hbm_gbs!r})",
        )


@dataclass(frozen=True)
class RuntimeConfig:
    """One runtime simulation: workload, policies, hardware, targets and the seed.

    Attributes:
        workload: the request stream.
        batch_policy: dynamic batching.
        placement: one of PLACEMENTS.
        service: service-time source.
        hardware: cores and shared HBM bandwidth.
        compiled_shapes: compiled seq_len buckets (`compiled_shapes.seq_len`), ascending; a
            shape runs in the smallest bucket >= it and falls back above the largest. None:
            every shape is compiled. With `service.source: model` the table's own bucket
            columns decide and this is only checked against them.
        fallback: the generic path's costs.
        sla: latency and throughput targets.
        seed: seed of every random draw (numpy Generator); same inputs + seed -> same bytes.
        contention: model shared-HBM contention (True for real runs; the tail attribution
            switches it off for its counterfactuals).
    """

    workload: Workload
    hardware: RuntimeHardware
    batch_policy: BatchPolicy = BatchPolicy()
    placement: str = "central-queue"
    service: ServiceSpec = ServiceSpec()
    compiled_shapes: tuple[int, ...] | None = None
    fallback: Fallback = Fallback()
    sla: SLA = SLA()
    seed: int = 0
    contention: bool = True

    def __post_init__(self) -> None:
        _require(
            self.placement in PLACEMENTS,
            f"placement must be one of {', '.join(PLACEMENTS)} (got {self.placement!r})",
        )
        if self.compiled_shapes is not None:
            cs = list(self.compiled_shapes)
            _require(len(cs) > 0, "compiled_shapes.seq_len must not be empty")
            _require(
                all(int(v) > 0 for v in cs) and cs == sorted(set(cs)),
                "compiled_shapes.seq_len must be positive, ascending and without duplicates",
            )
        _require(int(self.seed) >= 0, f"seed must be >= 0 (got {self.seed!r})")
