"""Hardware envelopes: what a device offers the compile-plan model, with units and sources.

A `HardwareEnvelope` is a frozen dataclass of spec-sheet figures plus the named parameters
fitted on the public A100 tables (`FITTED_FIELDS`, bounded by `PARAMETER_BOUNDS`). The device's compute units are partitioned into `cores` (placement targets: MIG-like
slices of a GPU, or the cores of an NPU); one kernel runs on one core. Every preset figure is cited
in `PRESET_SOURCES`; `FIELD_DOCS` gives each field's unit and valid range (the packet validator can
show them). Only the fitted fields are set from measurements (README "Parameters").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
"""Bytes per element of each dtype the packet format names."""

# (unit, low, high, low_inclusive): the valid range of each numeric field.
FIELD_DOCS: dict[str, tuple[str, str, float, float]] = {
    "cores": ("count", "placement targets the device is partitioned into", 1, 4096),
    "units_per_core": ("count", "compute units (SMs, MXUs, matrix engines) per core", 1, 100_000),
    "peak_tflops": ("TFLOP/s", "dtype -> dense matrix throughput of the whole device", 1e-3, 1e5),
    "vector_tflops": ("TFLOP/s", "non-matrix FP32 throughput of the whole device", 1e-3, 1e5),
    "hbm_gbs": ("GB/s", "HBM bandwidth of the whole device (1 GB = 1e9 bytes)", 1.0, 1e5),
    "cache_gbs": ("GB/s", "shared-cache/NoC bandwidth into all units together", 1.0, 1e6),
    "sram_kib_per_unit": ("KiB", "on-chip SRAM a unit's tiles may use", 1.0, 1e6),
    "shared_cache_mib": ("MiB", "cache shared by all units (L2, CMEM); 0 if none", 0.0, 1e5),
    "launch_overhead_us": ("us", "host/dispatch cost per kernel launch", 0.0, 1e5),
    "min_kernel_us": ("us", "device-side minimum time of any kernel", 0.0, 1e5),
    "clock_scale": ("ratio", "power-mode core clock / nominal clock", 0.05, 2.0),
    "tile_granule": ("elements", "tile dims must be multiples of this (MMA/MXU size)", 1, 1024),
    "compute_efficiency": ("ratio", "fraction of peak a tile's main loop sustains", 0.05, 1.0),
    "memory_efficiency": ("ratio", "fraction of HBM/cache bandwidth streams achieve", 0.05, 1.0),
    "fill_latency_us": ("us", "pipeline fill a wave of tiles pays at nominal clock", 0.0, 100.0),
    "matrix_flops_per_clock": ("FLOP/clk", "dense 16-bit matrix FLOP per clock per unit", 1, 1e7),
    "sustained_clock_ratio": ("ratio", "clock sustained under matrix load / boost", 0.05, 1.0),
    "cache_efficiency": (
        "ratio",
        "fraction of shared-cache feed bandwidth tiles achieve",
        0.05,
        1.0,
    ),
    "cluster_size": ("count", "tiles of a cluster sharing operand loads (multicast)", 1, 16),
    "tf32_tflops": ("TFLOP/s", "dense TF32 matrix throughput (0: no TF32)", 0.0, 1e5),
    "hbm_gib": ("GiB", "HBM capacity of the whole device (0: not given)", 0.0, 1e5),
}
"""field -> (unit, meaning, minimum, maximum): documentation and validation of each field."""

PARAMETER_BOUNDS: dict[str, tuple[float, float]] = {
    "compute_efficiency": (0.5, 1.0),
    "memory_efficiency": (0.5, 1.0),
    "cache_efficiency": (0.5, 1.0),
    "fill_latency_us": (0.2, 6.0),
    "min_kernel_us": (0.5, 5.0),
}
"""Physical bounds of the fitted fields (what a calibration may move them within): a
well-fed pipeline sustains 50-100% of its issue rate; streams reach 50-100% of a bandwidth
(A100 STREAM-like copies reach ~90% of HBM); a wave's fill is one to a few DRAM round trips
(~0.5 us each on A100, 2-8 x 700 cycles); the device floor of a kernel is 0.5-5 us (the
smallest measured A100 kernels take 2.0-2.5 us)."""

FITTED_FIELDS: tuple[str, ...] = tuple(PARAMETER_BOUNDS)
"""Fields set from measurements (the public A100 tables); every other figure is a spec-sheet
value, derived from one, or a stated assumption (README "Parameters")."""

FILL_LATENCY_CYCLES = 2.0e-6 * 312e12 / (108 * 2048)
"""A wave's fill (prologue, first loads, epilogue synchronisation) in SM clock cycles: the A100
fit of 2.0 us x its 1.41 GHz clock (312 TFLOP/s / (108 SMs x 2,048 FLOP/clk)), 2,821 cycles. GPU presets derive `fill_latency_us` from it at their own
clock (`HardwareEnvelope.clock_ghz`), so a faster-clocked device waits proportionally less."""

ARCHITECTURES = ("ampere", "hopper", "blackwell", "cdna3", "tpu", "generic")
"""Architecture families a preset can name; each has a default GEMM library (library.py)."""


@dataclass(frozen=True)
class HardwareEnvelope:
    """A device as the compile-plan model sees it (see FIELD_DOCS for units and ranges).

    Attributes:
        name: preset name or a user's label.
        cores: placement targets; a kernel runs on one core's units.
        units_per_core: compute units per core (SMs on GPUs, MXUs on TPUs).
        peak_tflops: dtype -> dense matrix TFLOP/s of the whole device at nominal clock.
        vector_tflops: non-matrix FP32 TFLOP/s of the whole device (softmax, elementwise math).
        hbm_gbs: HBM bandwidth of the whole device, GB/s, shared by all cores.
        cache_gbs: bandwidth from the shared cache/NoC into all units together, GB/s; one unit
            gets cache_gbs / total units, which also caps how fast one unit can pull from HBM.
        sram_kib_per_unit: on-chip SRAM per unit (shared memory, VMEM), KiB.
        shared_cache_mib: shared cache (L2, CMEM), MiB.
        launch_overhead_us: host launch/dispatch cost per kernel, us.
        min_kernel_us: device-side floor of every kernel (launch latency, drain), us.
        clock_scale: power-mode core clock relative to nominal; scales matrix, vector and cache
            throughput, not HBM bandwidth.
        tile_granule: GEMM/attention tile dims must be multiples of this many elements.
        compute_efficiency: fraction of per-unit peak a well-fed tile main loop sustains.
        memory_efficiency: fraction of HBM and cache bandwidth a streaming access achieves.
        fill_latency_us: fixed time each wave of tiles (and each dependent pass of an elementwise
            kernel) waits before its operands stream: DRAM round trips, prologue and epilogue
            synchronisation, us at the nominal clock (a cycle count: it stretches as
            1 / clock_scale; GPU presets set it from FILL_LATENCY_CYCLES / clock_ghz).
        matrix_flops_per_clock: dense 16-bit (bf16/fp16) matrix FLOP per clock of one unit
            (A100 SM 2048, H100/B200 SM 4096/8192, MI300X CU 2048); with the peak it gives
            the clock the peak is quoted at (`clock_ghz`).
        sustained_clock_ratio: clock a unit sustains under dense matrix load (power limit) over
            the clock the peak is quoted at; matrix throughput is peak x compute_efficiency x
            this ratio x clock_scale.
        cache_efficiency: fraction of the shared-cache feed bandwidth (`cache_gbs`) tiles achieve,
            a parameter apart from HBM's memory_efficiency; None (every preset) = the same value
            as memory_efficiency, as the A100 fit was made (`feed_efficiency`).
        cluster_size: tiles of one thread-block cluster that share operand loads from the shared
            cache by multicast (TMA multicast on Hopper and later); 1 = no multicast.
        tf32_tflops: dense TF32 matrix TFLOP/s of the device (0: none); fp32 matmuls use it when
            `allow_tf32` is set (a framework setting, off by default in PyTorch >= 1.12).
        hbm_gib: HBM capacity of the whole device, GiB (0: not given); LLM serving sizes the
            KV cache from it (what the weights leave free).
        architecture: architecture family (ARCHITECTURES); selects the default GEMM library.
        gemm_library: GEMM library descriptor name (library.LIBRARIES); "" = the architecture's
            default (library.default_library).
        allow_tf32: fp32 matmuls may run on TF32 tensor cores.
        source: where the figures come from.
    """

    name: str
    cores: int
    units_per_core: int
    peak_tflops: Any  # Mapping[str, float]; stored read-only
    vector_tflops: float
    hbm_gbs: float
    cache_gbs: float
    sram_kib_per_unit: float
    shared_cache_mib: float
    launch_overhead_us: float
    min_kernel_us: float
    clock_scale: float = 1.0
    tile_granule: int = 16
    compute_efficiency: float = 0.9
    memory_efficiency: float = 0.8
    fill_latency_us: float = 2.0
    matrix_flops_per_clock: float = 2048.0
    sustained_clock_ratio: float = 1.0
    cache_efficiency: float | None = None
    cluster_size: int = 1
    tf32_tflops: float = 0.0
    hbm_gib: float = 0.0
    architecture: str = "generic"
    gemm_library: str = ""
    allow_tf32: bool = False
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        peaks = dict(self.peak_tflops)
        for dtype in peaks:
            if dtype not in DTYPE_BYTES:
                raise ValueError(
                    f"hardware.peak_tflops: unknown dtype {dtype!r} "
                    f"(expected one of {', '.join(DTYPE_BYTES)})"
                )
        object.__setattr__(self, "peak_tflops", MappingProxyType(peaks))
        for name, (unit, _meaning, low, high) in FIELD_DOCS.items():
            values = peaks.values() if name == "peak_tflops" else [getattr(self, name)]
            if name == "cache_efficiency" and self.cache_efficiency is None:
                continue  # tied to memory_efficiency
            for value in values:
                if not isinstance(value, int | float) or isinstance(value, bool):
                    raise ValueError(f"hardware.{name} must be a number, got {value!r}")
                if not (math.isfinite(value) and low <= value <= high):
                    raise ValueError(
                        f"hardware.{name} must be within [{low:g}, {high:g}] {unit}, got {value!r}"
                    )
        if self.architecture not in ARCHITECTURES:
            raise ValueError(
                f"hardware.architecture: unknown {self.architecture!r} "
                f"(expected one of {', '.join(ARCHITECTURES)})"
            )
        from model.compiler.library import LIBRARIES

        if self.gemm_library and self.gemm_library not in LIBRARIES:
            raise ValueError(
                f"hardware.gemm_library: unknown {self.gemm_library!r} "
                f"(expected one of {', '.join(LIBRARIES)})"
            )
        if not isinstance(self.allow_tf32, bool):
            raise ValueError(f"hardware.allow_tf32 must be true or false, got {self.allow_tf32!r}")
        for name in ("cores", "units_per_core", "tile_granule", "cluster_size"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ValueError(
                    f"hardware.{name} must be a whole number, got {getattr(self, name)}"
                )

    @classmethod
    def from_fields(cls, name: str = "custom", **fields: Any) -> HardwareEnvelope:
        """An envelope from a user's fields (a hardware YAML), deriving what is left out.

        Required: cores, units_per_core, peak_tflops, hbm_gbs, sram_kib_per_unit. Left out:
        vector_tflops = 1/16 of the highest matrix peak (the A100's and H100's ratio);
        cache_gbs = 3.5 x hbm_gbs (A100 L2 vs HBM); shared_cache_mib = 0; launch_overhead_us
        = 4; min_kernel_us = 2; the rest take the dataclass defaults.
        """
        required = ("cores", "units_per_core", "peak_tflops", "hbm_gbs", "sram_kib_per_unit")
        missing = [f for f in required if f not in fields]
        if missing:
            raise ValueError(f"hardware: missing field(s) {', '.join(missing)}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ValueError(f"hardware: unknown field(s) {', '.join(unknown)}")
        peaks = fields["peak_tflops"]
        if not isinstance(peaks, dict) or not peaks:
            raise ValueError("hardware.peak_tflops must map dtypes to TFLOP/s")
        derived = {
            "vector_tflops": max(float(v) for v in peaks.values()) / 16.0,
            "cache_gbs": 3.5 * float(fields["hbm_gbs"]),
            "shared_cache_mib": 0.0,
            "launch_overhead_us": 4.0,
            "min_kernel_us": 2.0,
        }
        return cls(name=name, **{**derived, **fields})

    def library(self):
        """The GEMM library descriptor kernels on this device are costed with."""
        from model.compiler.library import LIBRARIES, default_library

        return LIBRARIES[self.gemm_library] if self.gemm_library else default_library(self)

    def __hash__(self) -> int:
        return hash(
            (self.name, self.cores, self.units_per_core, tuple(sorted(self.peak_tflops.items())))
        )

    @property
    def total_units(self) -> int:
        """Compute units of the whole device."""
        return self.cores * self.units_per_core

    def dtype_bytes(self, dtype: str) -> int:
        """Bytes per element of `dtype`."""
        return DTYPE_BYTES[dtype]

    @property
    def feed_efficiency(self) -> float:
        """Fraction of the shared-cache feed bandwidth tiles achieve (cache_efficiency, or
        memory_efficiency where it is not set apart)."""
        return self.memory_efficiency if self.cache_efficiency is None else self.cache_efficiency

    @property
    def clock_ghz(self) -> float:
        """The clock the 16-bit matrix peak is quoted at, GHz: peak / (units x FLOP/clk/unit)
        (A100 1.41, H100 1.83, B200 1.86, MI300X 2.10)."""
        peaks = self.peak_tflops
        peak = peaks.get("bf16", peaks.get("fp16", max(peaks.values())))
        return peak * 1e12 / (self.total_units * self.matrix_flops_per_clock) / 1e9

    @property
    def fill_latency_cycles(self) -> float:
        """fill_latency_us in clock cycles at the nominal clock."""
        return self.fill_latency_us * 1e3 * self.clock_ghz

    def fill_s(self) -> float:
        """A wave's fill at the power-mode clock, seconds (a cycle count: 1 / clock_scale)."""
        return self.fill_latency_us * 1e-6 / self.clock_scale

    def matrix_dtype(self, dtype: str) -> tuple[str, str | None]:
        """The matrix dtype `dtype`'s matmuls run as on this device, and a note when it differs.

        fp32 runs as tf32 where the device has TF32 and `allow_tf32` is set; a 16-bit dtype the
        device does not list runs as the other 16-bit one (fp16 on a bf16-only TPU); fp8 or
        int8 without a native peak are converted to the 16-bit matrix dtype (weight-only
        kernels dequantize in the main loop). Bytes moved stay those of `dtype`.
        """
        peaks = self.peak_tflops
        if dtype == "fp32" and self.allow_tf32 and self.tf32_tflops > 0:
            return "tf32", "fp32 matmuls run on TF32 tensor cores (allow_tf32)"
        if dtype in peaks:
            return dtype, None
        for fallback in ("bf16", "fp16"):
            if fallback in peaks:
                return fallback, (
                    f"{self.name} lists no {dtype} matrix peak; {dtype} matmuls run as {fallback}"
                )
        best = max(peaks, key=lambda d: peaks[d])
        return best, f"{self.name} lists no {dtype} matrix peak; {dtype} matmuls run as {best}"

    def matrix_peak_tflops(self, dtype: str) -> float:
        """Dense matrix TFLOP/s of the whole device for `dtype`'s matmuls (see matrix_dtype)."""
        used, _ = self.matrix_dtype(dtype)
        return self.tf32_tflops if used == "tf32" else float(self.peak_tflops[used])

    def unit_flops(self, dtype: str) -> float:
        """Dense matrix FLOP/s one unit sustains in `dtype`: peak x pipeline efficiency x
        sustained/boost clock (the power limit) x power-mode clock."""
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"hardware {self.name!r}: unknown dtype {dtype!r}")
        peak = self.matrix_peak_tflops(dtype) * 1e12 * self.clock_scale
        efficiency = self.compute_efficiency * self.sustained_clock_ratio
        return peak * efficiency / self.total_units

    def unit_vector_flops(self) -> float:
        """Non-matrix FP32 FLOP/s of one unit at the power-mode clock (no efficiency factor)."""
        return self.vector_tflops * 1e12 * self.clock_scale / self.total_units

    def unit_feed_bps(self) -> float:
        """Bytes/s one unit achieves from the shared cache (also its cap on HBM pulls)."""
        cache = self.cache_gbs * 1e9 * self.clock_scale * self.feed_efficiency
        return cache / self.total_units

    def core_hbm_bps(self) -> float:
        """Bytes/s one core achieves from HBM when it is alone on the device."""
        device = self.hbm_gbs * 1e9 * self.memory_efficiency
        return min(device, self.units_per_core * self.unit_feed_bps())

    def sram_bytes(self) -> float:
        """On-chip SRAM per unit, bytes."""
        return self.sram_kib_per_unit * 1024.0

    def with_busy_cores(self, busy_cores: int) -> HardwareEnvelope:
        """The device as one core sees it while `busy_cores` cores (itself included) run at
        once: its share of the shared cache, shared_cache_mib / busy_cores. Identical
        co-runners hold equal shares of an LRU cache (Chandra et al., HPCA 2005, model the
        extra misses from co-runners' stack distances; with equal access streams each keeps
        1/c); data the core re-reads through the cache alone may then come from HBM. HBM
        bandwidth is shared at run time (model/runtime contention), not here."""
        if not (isinstance(busy_cores, int) and 1 <= busy_cores <= self.cores):
            raise ValueError(
                f"busy_cores must be a whole number in [1, {self.cores}] (got {busy_cores!r})"
            )
        if busy_cores == 1:
            return self
        return replace(self, shared_cache_mib=self.shared_cache_mib / busy_cores)

    def with_overrides(self, **overrides: Any) -> HardwareEnvelope:
        """A copy with some fields replaced (unknown fields raise a one-line ValueError).

        Overriding `cores` without `units_per_core` re-partitions the same silicon: units per
        core becomes total units // cores (a core needs at least one unit).
        """
        known = {f.name for f in fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(
                f"hardware: unknown field(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        if "cores" in overrides and "units_per_core" not in overrides:
            cores = overrides["cores"]
            if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
                raise ValueError(f"hardware.cores must be a whole number >= 1, got {cores!r}")
            if cores > self.total_units:
                raise ValueError(
                    f"hardware.cores={cores} exceeds the {self.total_units} compute units of "
                    f"{self.name!r}; give units_per_core too to describe a different device"
                )
            overrides["units_per_core"] = self.total_units // cores
        return replace(self, **overrides)


def _gpu_fill(envelope: HardwareEnvelope) -> HardwareEnvelope:
    """The envelope with its fill latency set from FILL_LATENCY_CYCLES at its own clock."""
    return replace(envelope, fill_latency_us=FILL_LATENCY_CYCLES / (envelope.clock_ghz * 1e3))


def _a100() -> HardwareEnvelope:
    # The fitting reference: fill_latency_us is the A100 fit itself (2.0 us = 2,821 cycles).
    return HardwareEnvelope(
        name="a100-sxm",
        cores=1,
        units_per_core=108,
        peak_tflops={"bf16": 312.0, "fp16": 312.0, "int8": 624.0, "fp32": 19.5},
        vector_tflops=19.5,
        hbm_gbs=2039.0,
        hbm_gib=80.0,
        cache_gbs=7219.0,
        sram_kib_per_unit=164.0,
        shared_cache_mib=40.0,
        launch_overhead_us=4.0,
        min_kernel_us=2.0,
        tile_granule=16,
        matrix_flops_per_clock=2048.0,
        tf32_tflops=156.0,
        architecture="ampere",
        source="NVIDIA A100 datasheet and whitepaper (SXM4 80GB)",
    )


def _h100() -> HardwareEnvelope:
    return _gpu_fill(
        HardwareEnvelope(
            name="h100-sxm",
            cores=1,
            units_per_core=132,
            peak_tflops={
                "bf16": 989.4,
                "fp16": 989.4,
                "fp8": 1978.9,
                "int8": 1978.9,
                "fp32": 67.0,
            },
            vector_tflops=67.0,
            hbm_gbs=3350.0,
            hbm_gib=80.0,
            cache_gbs=11450.0,
            sram_kib_per_unit=228.0,
            shared_cache_mib=50.0,
            launch_overhead_us=4.0,
            min_kernel_us=2.0,
            tile_granule=16,
            matrix_flops_per_clock=4096.0,
            sustained_clock_ratio=0.85,
            cluster_size=2,
            tf32_tflops=494.7,
            architecture="hopper",
            source="NVIDIA H100 datasheet and Hopper whitepaper (SXM5 80GB)",
        )
    )


def _h200() -> HardwareEnvelope:
    return replace(
        _h100(),
        name="h200-sxm",
        hbm_gbs=4800.0,
        hbm_gib=141.0,
        source="NVIDIA H200 datasheet (SXM 141GB); compute as H100 SXM",
    )


def _b200() -> HardwareEnvelope:
    return _gpu_fill(
        HardwareEnvelope(
            name="b200",
            cores=1,
            units_per_core=148,
            peak_tflops={
                "bf16": 2250.0,
                "fp16": 2250.0,
                "fp8": 4500.0,
                "int8": 4500.0,
                "fp32": 74.4,
            },
            vector_tflops=74.4,
            hbm_gbs=8000.0,
            hbm_gib=180.0,
            cache_gbs=13020.0,
            sram_kib_per_unit=228.0,
            shared_cache_mib=126.0,
            launch_overhead_us=4.0,
            min_kernel_us=2.0,
            tile_granule=16,
            matrix_flops_per_clock=8192.0,
            sustained_clock_ratio=0.85,
            cluster_size=2,
            tf32_tflops=1100.0,
            architecture="blackwell",
            source="NVIDIA HGX B200 datasheet and Blackwell architecture technical brief",
        )
    )


def _mi300x() -> HardwareEnvelope:
    return _gpu_fill(
        HardwareEnvelope(
            name="mi300x",
            cores=1,
            units_per_core=304,
            peak_tflops={
                "bf16": 1307.4,
                "fp16": 1307.4,
                "fp8": 2614.9,
                "int8": 2614.9,
                "fp32": 163.4,
            },
            vector_tflops=163.4,
            hbm_gbs=5300.0,
            hbm_gib=192.0,
            cache_gbs=17200.0,
            sram_kib_per_unit=64.0,
            shared_cache_mib=256.0,
            launch_overhead_us=4.0,
            min_kernel_us=2.0,
            tile_granule=16,
            matrix_flops_per_clock=2048.0,
            sustained_clock_ratio=0.55,
            cluster_size=1,
            tf32_tflops=653.7,
            architecture="cdna3",
            source="AMD Instinct MI300X datasheet and CDNA 3 architecture whitepaper",
        )
    )


def _tpu_v4() -> HardwareEnvelope:
    return HardwareEnvelope(
        name="tpu-v4",
        cores=1,
        units_per_core=8,
        peak_tflops={"bf16": 275.0, "int8": 275.0, "fp32": 275.0 / 8},
        vector_tflops=275.0 / 16,
        hbm_gbs=1200.0,
        hbm_gib=32.0,
        cache_gbs=4800.0,
        sram_kib_per_unit=4096.0,
        shared_cache_mib=128.0,
        launch_overhead_us=2.0,
        min_kernel_us=1.0,
        tile_granule=128,
        matrix_flops_per_clock=32768.0,
        architecture="tpu",
        source="Jouppi et al., TPU v4, ISCA 2023; Google Cloud TPU v4 documentation",
    )


def _npu_8c() -> HardwareEnvelope:
    return HardwareEnvelope(
        name="npu-8c",
        cores=8,
        units_per_core=4,
        peak_tflops={"bf16": 256.0, "fp16": 256.0, "fp8": 512.0, "int8": 512.0, "fp32": 32.0},
        vector_tflops=16.0,
        hbm_gbs=1200.0,
        hbm_gib=64.0,
        cache_gbs=3200.0,
        sram_kib_per_unit=256.0,
        shared_cache_mib=32.0,
        launch_overhead_us=6.0,
        min_kernel_us=2.0,
        tile_granule=32,
        matrix_flops_per_clock=8192.0,
        architecture="generic",
        source="generic 8-core inference NPU design point (not a product); see PRESET_SOURCES",
    )


_FEED = (
    "fill_latency_us: FILL_LATENCY_CYCLES (2,821, the A100 fit) at the clock derived from the "
    "peak; compute_efficiency, memory_efficiency (also the cache feed's): the A100 fits"
)

PRESET_SOURCES: dict[str, dict[str, str]] = {
    "a100-sxm": {
        "units_per_core": "108 SMs: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020)",
        "peak_tflops": "312 dense BF16/FP16, 624 INT8, 19.5 FP32: NVIDIA A100 datasheet; no FP8",
        "tf32_tflops": "156 dense TF32: NVIDIA A100 datasheet",
        "vector_tflops": "19.5 FP32 (non-tensor): NVIDIA A100 datasheet",
        "hbm_gbs": "2,039 GB/s HBM2e (80GB SXM4): NVIDIA A100 datasheet",
        "hbm_gib": "80 GB HBM2e (SXM4 80GB; memory sizes are binary, 5 x 16 GiB stacks): datasheet",
        "cache_gbs": "L2 read bandwidth 5,120 bytes/clk (A100 whitepaper) x 1.41 GHz boost",
        "sram_kib_per_unit": "up to 164 KB shared memory per SM: A100 whitepaper",
        "shared_cache_mib": "40 MB L2: A100 whitepaper",
        "launch_overhead_us": "host launch ~4 us: 1-7 us for small kernels (shared/NOTES.md)",
        "min_kernel_us": (
            "2.0 us: the smallest measured A100 kernels take 2.0-2.5 us (profiler and "
            "CUDA-graph timings); set with the efficiency parameters (model/compiler/README.md)"
        ),
        "tile_granule": "16: bf16 mma.sync m16n8k16 fragment (PTX ISA)",
        "matrix_flops_per_clock": (
            "2,048: 1,024 dense FP16 FMA/clk per SM (A100 whitepaper); 312 TFLOP/s / (108 x 2,048)"
            " = 1.41 GHz, the whitepaper's boost clock"
        ),
        "sustained_clock_ratio": "1.0: the A100 fits (compute_efficiency 0.9) hold at boost",
        "cluster_size": "1: Ampere has no thread-block clusters",
        "architecture": "ampere (sm_80)",
        "fitted": _FEED,
    },
    "h100-sxm": {
        "units_per_core": "132 SMs: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022)",
        "peak_tflops": "989.4 dense BF16/FP16, 1,978.9 FP8/INT8, 67 FP32: NVIDIA H100 datasheet",
        "tf32_tflops": "494.7 dense TF32: NVIDIA H100 datasheet",
        "vector_tflops": "67 FP32 (non-tensor): NVIDIA H100 datasheet",
        "hbm_gbs": "3,350 GB/s HBM3 (SXM5 80GB): NVIDIA H100 datasheet",
        "hbm_gib": "80 GB HBM3 (SXM5; 5 x 16 GiB stacks enabled): NVIDIA H100 datasheet",
        "cache_gbs": "derived: A100's L2 bytes/clk per SM x 132 SMs x 1.83 GHz (not published)",
        "sram_kib_per_unit": "up to 228 KB shared memory per SM: H100 whitepaper",
        "shared_cache_mib": "50 MB L2: H100 whitepaper",
        "launch_overhead_us": "as A100 (host side, same driver stack)",
        "min_kernel_us": "as A100 (2.0 us)",
        "tile_granule": "16: wgmma/mma bf16 fragment",
        "matrix_flops_per_clock": (
            "4,096: 2,048 dense FP16 FMA/clk per SM, twice A100's (H100 whitepaper); "
            "989.4 / (132 x 4,096) = 1.83 GHz"
        ),
        "sustained_clock_ratio": (
            "0.85: under the 700 W limit dense tensor work runs below the quoted clock; the best "
            "published H100 bf16 kernels reach 75-78% of 989.4 TFLOP/s (FlashAttention-3, Shah "
            "et al. 2024: 740 TFLOP/s; DeepGEMM fp8 ~1,550 of 1,979), = 0.9 pipeline x 0.85"
        ),
        "cluster_size": (
            "2: thread-block clusters with TMA multicast; CUTLASS 3 / cuBLAS sm90 GEMMs default "
            "to 2x1 clusters sharing the B panel (H100 whitepaper; CUTLASS 3 docs)"
        ),
        "architecture": "hopper (sm_90)",
        "fitted": _FEED,
    },
    "h200-sxm": {
        "hbm_gbs": "4,800 GB/s HBM3e (141GB): NVIDIA H200 datasheet",
        "hbm_gib": "141 GB HBM3e: NVIDIA H200 datasheet",
        "peak_tflops": "same GH100 silicon and clocks as H100 SXM: NVIDIA H200 datasheet",
        "other": "all other figures as h100-sxm (same 700 W limit, clusters, SRAM, L2)",
        "fitted": _FEED,
    },
    "b200": {
        "units_per_core": (
            "148 SMs enabled (2 dies): Blackwell architecture technical brief; Jarmusch et al., "
            "'Dissecting the NVIDIA Blackwell Architecture with Microbenchmarks' (2025)"
        ),
        "peak_tflops": (
            "2,250 dense BF16/FP16, 4,500 FP8/INT8 (sparse figures halved): NVIDIA HGX B200 "
            "datasheet (1,000 W); fp32 = vector_tflops (no non-TF32 matrix path)"
        ),
        "tf32_tflops": "1,100 dense TF32 (2.2 PF sparse halved): NVIDIA HGX B200 datasheet",
        "vector_tflops": "derived: 128 FP32 lanes x 2 FLOP x 148 SMs x 1.965 GHz boost = 74.4",
        "hbm_gbs": "8,000 GB/s HBM3e (180GB): NVIDIA HGX B200 datasheet",
        "hbm_gib": "180 GB HBM3e per GPU (1,440 GB per 8-GPU HGX): NVIDIA HGX B200 datasheet",
        "cache_gbs": "derived: A100's L2 bytes/clk per SM x 148 SMs x 1.86 GHz (not published)",
        "sram_kib_per_unit": "up to 228 KB shared memory per SM: CUDA C++ Programming Guide, cc 10.0",
        "shared_cache_mib": "126 MB L2: Jarmusch et al. 2025 (microbenchmarks)",
        "launch_overhead_us": "as A100 (host side, same driver stack)",
        "min_kernel_us": "as A100 (2.0 us)",
        "tile_granule": "16: tcgen05/UMMA bf16 K step",
        "matrix_flops_per_clock": (
            "8,192: twice Hopper's tensor throughput per SM (Blackwell technical brief); "
            "2,250 / (148 x 8,192) = 1.86 GHz"
        ),
        "sustained_clock_ratio": "0.85: assumption, as Hopper (power-limited dense tensor work)",
        "cluster_size": "2: clusters with TMA multicast, CUTLASS 3 sm100 default 2x1 (2-SM UMMA)",
        "architecture": "blackwell (sm_100)",
        "fitted": _FEED,
    },
    "mi300x": {
        "units_per_core": "304 CUs (8 XCDs x 38): AMD Instinct MI300X datasheet",
        "peak_tflops": (
            "1,307.4 dense BF16/FP16, 2,614.9 FP8/INT8, 163.4 FP32 matrix: AMD MI300X datasheet "
            "(2,100 MHz peak engine clock)"
        ),
        "tf32_tflops": "653.7 dense TF32: AMD MI300X datasheet",
        "vector_tflops": "163.4 FP32 vector: AMD MI300X datasheet",
        "hbm_gbs": "5,300 GB/s HBM3 (192GB): AMD MI300X datasheet",
        "hbm_gib": "192 GB HBM3 (8 x 24 GB stacks): AMD MI300X datasheet",
        "cache_gbs": "17.2 TB/s peak Infinity Cache bandwidth: AMD CDNA 3 whitepaper",
        "sram_kib_per_unit": "64 KB LDS per CU: AMD CDNA 3 whitepaper",
        "shared_cache_mib": "256 MB Infinity Cache (last level, shared by all XCDs): CDNA 3 whitepaper",
        "launch_overhead_us": "assumption: as A100 (HIP launch, same order as CUDA)",
        "min_kernel_us": "assumption: as A100 (2.0 us)",
        "tile_granule": "16: MFMA 16x16x16 bf16 (CDNA 3 ISA)",
        "matrix_flops_per_clock": (
            "2,048: 1,024 dense FP16 FMA/clk per CU (CDNA 3 whitepaper); "
            "1,307.4 / (304 x 2,048) = 2.10 GHz, the datasheet's peak engine clock"
        ),
        "sustained_clock_ratio": (
            "0.55: under the 750 W limit the engine clock drops well below 2.1 GHz in dense "
            "matrix work; published hipBLASLt bf16 GEMMs reach ~50% of the 1,307 TFLOP/s peak "
            "(SemiAnalysis, 'MI300X vs H100 vs H200 benchmark part 1', Dec 2024) = 0.9 x 0.55"
        ),
        "cluster_size": "1: CDNA 3 has no cluster multicast (each CU loads its own operands)",
        "architecture": "cdna3 (gfx942)",
        "fitted": _FEED,
    },
    "tpu-v4": {
        "units_per_core": "2 TensorCores x 4 MXUs, megacore (one placement target): ISCA 2023",
        "peak_tflops": "275 TFLOP/s bf16 and int8 per chip: Google Cloud TPU v4 docs",
        "vector_tflops": "assumption: VPU ~1/16 of MXU peak (not published)",
        "hbm_gbs": "1,200 GB/s HBM2 per chip: Google Cloud TPU v4 docs",
        "hbm_gib": "32 GiB HBM2 per chip: Google Cloud TPU v4 docs",
        "cache_gbs": "assumption: 4x HBM (VMEM fill bandwidth not published)",
        "sram_kib_per_unit": "32 MiB VMEM per chip / 8 MXUs: Jouppi et al. ISCA 2023",
        "shared_cache_mib": "128 MiB CMEM: Jouppi et al. ISCA 2023",
        "launch_overhead_us": "assumption: XLA program dispatch ~2 us per fused op",
        "min_kernel_us": "assumption: 1 us",
        "tile_granule": "128: MXU is a 128x128 systolic array",
        "matrix_flops_per_clock": (
            "32,768: a 128x128 MXU does 16,384 MACs per clock; 275 / (8 x 32,768) = 1.05 GHz "
            "(Jouppi et al. ISCA 2023)"
        ),
        "fill_latency_us": "assumption: 2 us (no GPU-style SM pipeline; not cycle-derived)",
        "sustained_clock_ratio": "1.0: assumption (no published power-limited MXU clock)",
        "tf32_tflops": "0: no TF32; fp32 matmuls at the listed fp32 peak (XLA multi-pass bf16)",
        "fitted": "compute_efficiency, memory_efficiency: the A100 fits, unchanged",
        "cluster_size": "1: no multicast modeled",
        "architecture": "tpu (fp16 runs as bf16)",
    },
    "npu-8c": {
        "all": (
            "a generic 8-core inference accelerator, not a product: 4 matrix engines per core "
            "(32 TFLOP/s bf16 per core), 256 KiB SRAM per engine (1 MiB per core), one shared "
            "1,200 GB/s HBM stack, 32 MiB shared cache, a 400 GB/s port per core (so eight "
            "busy cores oversubscribe HBM 2.7x), 6 us driver-queue dispatch, 32-element MAC "
            "array granule, 8,192 FLOP/clk per engine (~1 GHz): a design point representative "
            "of 2023-24 inference NPUs"
        ),
        "hbm_gib": "64 GiB: design point (one HBM3 stack generation of 2023-24 parts: 16-64 GiB)",
    },
}
"""preset -> field -> citation (or stated assumption) for each figure."""

_PRESETS = {
    "a100-sxm": _a100,
    "h100-sxm": _h100,
    "h200-sxm": _h200,
    "b200": _b200,
    "mi300x": _mi300x,
    "tpu-v4": _tpu_v4,
    "npu-8c": _npu_8c,
}
PRESET_NAMES: tuple[str, ...] = tuple(_PRESETS)
"""Names of the built-in hardware presets."""


def preset(name: str, **overrides: Any) -> HardwareEnvelope:
    """The built-in envelope `name`, optionally with field overrides (see with_overrides)."""
    if name not in _PRESETS:
        raise ValueError(
            f"hardware.preset: unknown preset {name!r} (known: {', '.join(PRESET_NAMES)})"
        )
    envelope = _PRESETS[name]()
    return envelope.with_overrides(**overrides) if overrides else envelope
