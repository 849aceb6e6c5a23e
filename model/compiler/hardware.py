"""Hardware envelopes: what a device offers the compile-plan model, with units and sources.

A `HardwareEnvelope` is a frozen dataclass of spec-sheet figures plus four named efficiency
parameters. The device's compute units are partitioned into `cores` (placement targets: MIG-like
slices of a GPU, or the cores of an NPU); one kernel runs on one core. Every preset figure is cited
in `PRESET_SOURCES`; `FIELD_DOCS` gives each field's unit and valid range (the packet validator can
show them). Efficiency parameters are the only ones set from measurements (README "Parameters").
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
    "fill_latency_us": ("us", "pipeline fill a wave of tiles pays before streaming", 0.0, 100.0),
}
"""field -> (unit, meaning, minimum, maximum): documentation and validation of each field."""


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
            synchronisation, us.
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
            for value in values:
                if not isinstance(value, int | float) or isinstance(value, bool):
                    raise ValueError(f"hardware.{name} must be a number, got {value!r}")
                if not (math.isfinite(value) and low <= value <= high):
                    raise ValueError(
                        f"hardware.{name} must be within [{low:g}, {high:g}] {unit}, got {value!r}"
                    )
        for name in ("cores", "units_per_core", "tile_granule"):
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

    def unit_flops(self, dtype: str) -> float:
        """Dense matrix FLOP/s one unit sustains in `dtype` (peak x clock x efficiency)."""
        if dtype not in self.peak_tflops:
            raise ValueError(
                f"hardware {self.name!r} has no peak_tflops for dtype {dtype!r} "
                f"(it lists {', '.join(sorted(self.peak_tflops))})"
            )
        peak = self.peak_tflops[dtype] * 1e12 * self.clock_scale
        return peak * self.compute_efficiency / self.total_units

    def unit_vector_flops(self) -> float:
        """Non-matrix FP32 FLOP/s of one unit at the power-mode clock (no efficiency factor)."""
        return self.vector_tflops * 1e12 * self.clock_scale / self.total_units

    def unit_feed_bps(self) -> float:
        """Bytes/s one unit achieves from the shared cache (also its cap on HBM pulls)."""
        cache = self.cache_gbs * 1e9 * self.clock_scale * self.memory_efficiency
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


def _a100() -> HardwareEnvelope:
    return HardwareEnvelope(
        name="a100-sxm",
        cores=1,
        units_per_core=108,
        peak_tflops={"bf16": 312.0, "fp16": 312.0, "int8": 624.0, "fp32": 19.5},
        vector_tflops=19.5,
        hbm_gbs=2039.0,
        cache_gbs=7219.0,
        sram_kib_per_unit=164.0,
        shared_cache_mib=40.0,
        launch_overhead_us=4.0,
        min_kernel_us=2.0,
        tile_granule=16,
        source="NVIDIA A100 datasheet and whitepaper (SXM4 80GB)",
    )


def _h100() -> HardwareEnvelope:
    return HardwareEnvelope(
        name="h100-sxm",
        cores=1,
        units_per_core=132,
        peak_tflops={"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "int8": 1978.9, "fp32": 67.0},
        vector_tflops=67.0,
        hbm_gbs=3350.0,
        cache_gbs=11450.0,
        sram_kib_per_unit=228.0,
        shared_cache_mib=50.0,
        launch_overhead_us=4.0,
        min_kernel_us=2.0,
        tile_granule=16,
        source="NVIDIA H100 datasheet and Hopper whitepaper (SXM5 80GB)",
    )


def _h200() -> HardwareEnvelope:
    return replace(
        _h100(),
        name="h200-sxm",
        hbm_gbs=4800.0,
        source="NVIDIA H200 datasheet (SXM 141GB); compute as H100 SXM",
    )


def _tpu_v4() -> HardwareEnvelope:
    return HardwareEnvelope(
        name="tpu-v4",
        cores=1,
        units_per_core=8,
        peak_tflops={"bf16": 275.0, "int8": 275.0, "fp32": 275.0 / 8},
        vector_tflops=275.0 / 16,
        hbm_gbs=1200.0,
        cache_gbs=4800.0,
        sram_kib_per_unit=4096.0,
        shared_cache_mib=128.0,
        launch_overhead_us=2.0,
        min_kernel_us=1.0,
        tile_granule=128,
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
        cache_gbs=3200.0,
        sram_kib_per_unit=256.0,
        shared_cache_mib=32.0,
        launch_overhead_us=6.0,
        min_kernel_us=2.0,
        tile_granule=32,
        source="generic 8-core inference NPU design point (not a product); see PRESET_SOURCES",
    )


PRESET_SOURCES: dict[str, dict[str, str]] = {
    "a100-sxm": {
        "units_per_core": "108 SMs: NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020)",
        "peak_tflops": "312 dense BF16/FP16, 624 INT8, 19.5 FP32: NVIDIA A100 datasheet; no FP8",
        "vector_tflops": "19.5 FP32 (non-tensor): NVIDIA A100 datasheet",
        "hbm_gbs": "2,039 GB/s HBM2e (80GB SXM4): NVIDIA A100 datasheet",
        "cache_gbs": "L2 read bandwidth 5,120 bytes/clk (A100 whitepaper) x 1.41 GHz boost",
        "sram_kib_per_unit": "up to 164 KB shared memory per SM: A100 whitepaper",
        "shared_cache_mib": "40 MB L2: A100 whitepaper",
        "launch_overhead_us": "host launch ~4 us: 1-7 us for small kernels (shared/NOTES.md)",
        "min_kernel_us": (
            "2.0 us: the smallest measured A100 kernels take 2.0-2.5 us (profiler and "
            "CUDA-graph timings); set with the efficiency parameters (model/compiler/README.md)"
        ),
        "tile_granule": "16: bf16 mma.sync m16n8k16 fragment (PTX ISA)",
    },
    "h100-sxm": {
        "units_per_core": "132 SMs: NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022)",
        "peak_tflops": "989.4 dense BF16/FP16, 1,978.9 FP8/INT8, 67 FP32: NVIDIA H100 datasheet",
        "vector_tflops": "67 FP32 (non-tensor): NVIDIA H100 datasheet",
        "hbm_gbs": "3,350 GB/s HBM3 (SXM5 80GB): NVIDIA H100 datasheet",
        "cache_gbs": "derived: A100's L2 bytes/clk per SM x 132 SMs x 1.83 GHz (not published)",
        "sram_kib_per_unit": "up to 228 KB shared memory per SM: H100 whitepaper",
        "shared_cache_mib": "50 MB L2: H100 whitepaper",
        "launch_overhead_us": "as A100 (host side, same driver stack)",
        "min_kernel_us": "as A100 (2.0 us)",
        "tile_granule": "16: wgmma/mma bf16 fragment",
    },
    "h200-sxm": {
        "hbm_gbs": "4,800 GB/s HBM3e (141GB): NVIDIA H200 datasheet",
        "peak_tflops": "same GH100 silicon and clocks as H100 SXM: NVIDIA H200 datasheet",
        "other": "all other figures as h100-sxm",
    },
    "tpu-v4": {
        "units_per_core": "2 TensorCores x 4 MXUs, megacore (one placement target): ISCA 2023",
        "peak_tflops": "275 TFLOP/s bf16 and int8 per chip: Google Cloud TPU v4 docs",
        "vector_tflops": "assumption: VPU ~1/16 of MXU peak (not published)",
        "hbm_gbs": "1,200 GB/s HBM2 per chip: Google Cloud TPU v4 docs",
        "cache_gbs": "assumption: 4x HBM (VMEM fill bandwidth not published)",
        "sram_kib_per_unit": "32 MiB VMEM per chip / 8 MXUs: Jouppi et al. ISCA 2023",
        "shared_cache_mib": "128 MiB CMEM: Jouppi et al. ISCA 2023",
        "launch_overhead_us": "assumption: XLA program dispatch ~2 us per fused op",
        "min_kernel_us": "assumption: 1 us",
        "tile_granule": "128: MXU is a 128x128 systolic array",
    },
    "npu-8c": {
        "all": (
            "a generic 8-core inference accelerator, not a product: 4 matrix engines per core "
            "(32 TFLOP/s bf16 per core), 256 KiB SRAM per engine (1 MiB per core), one shared "
            "1,200 GB/s HBM stack, 32 MiB shared cache, a 400 GB/s port per core (so eight "
            "busy cores oversubscribe HBM 2.7x), 6 us driver-queue dispatch, 32-element MAC "
            "array granule: a design point representative of 2023-24 inference NPUs"
        ),
    },
}
"""preset -> field -> citation (or stated assumption) for each figure."""

_PRESETS = {
    "a100-sxm": _a100,
    "h100-sxm": _h100,
    "h200-sxm": _h200,
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
