"""Tile shapes: the candidates an autotuner searches, explicit tiles, and their SRAM footprint.

A GEMM tile is an m x n output block stepping k elements of the reduction at a time, with an
optional split-K factor (the reduction cut into `split` slices run as separate tiles and summed).
An attention tile is a block of `q` query rows against `kv`-long key/value blocks, with an
optional KV split (flash-decoding). Tiles are double-buffered: two k-steps of operands are
staged in SRAM at once (`STAGES`). Accumulators live in registers/accumulator memory and are
not charged to SRAM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.compiler.hardware import HardwareEnvelope

STAGES = 2
"""Operand stages held in SRAM per tile (double buffering: load one k-step while computing one)."""

SPLITS = (1, 4, 16)
"""Split-K (GEMM) and split-KV (decode attention) factors the autotuner tries."""


@dataclass(frozen=True)
class GemmTile:
    """A GEMM tile: m x n output block, k reduction step (elements), split-K factor."""

    m: int
    n: int
    k: int
    split: int = 1

    def label(self) -> str:
        """Short text form, e.g. `128x128x64` or `64x64x64/s4`."""
        base = f"{self.m}x{self.n}x{self.k}"
        return base if self.split == 1 else f"{base}/s{self.split}"


@dataclass(frozen=True)
class AttentionTile:
    """An attention tile: q query rows against kv-long key/value blocks, KV split factor."""

    q: int
    kv: int
    split: int = 1

    def label(self) -> str:
        """Short text form, e.g. `q128xkv64` or `q32xkv64/s8`."""
        base = f"q{self.q}xkv{self.kv}"
        return base if self.split == 1 else f"{base}/s{self.split}"


Tile = GemmTile | AttentionTile


def gemm_staging_bytes(tm, tn, tk, dtype_bytes: int):
    """SRAM bytes a GEMM tile stages: STAGES k-steps of its A (m x k) and B (k x n) blocks."""
    return STAGES * (tm + tn) * tk * dtype_bytes


def attention_staging_bytes(tq, tkv, head_dim: int, dtype_bytes: int):
    """SRAM bytes an attention tile holds: its Q block plus STAGES K and V blocks."""
    return (tq + STAGES * 2 * tkv) * head_dim * dtype_bytes


def gemm_candidates(hw: HardwareEnvelope, dtype_bytes: int) -> np.ndarray:
    """(C, 4) float array of [m, n, k, split] GEMM tiles that fit SRAM, for the autotuner.

    m ranges over granule x {1, 2, 4, 8, 16} up to 256 (or one granule when that is larger),
    n over the same from two granules, k is four granules, split over SPLITS. Split-K is a
    device for small output tiles (few tiles to spread), so only tiles up to 4 x 8 granules
    are offered split.
    """
    g = hw.tile_granule
    sizes = sorted({g * f for f in (1, 2, 4, 8, 16) if g * f <= max(256, g)})
    rows = [
        (tm, tn, 4 * g, split)
        for tm in sizes
        for tn in sizes
        if tn >= min(2 * g, sizes[-1])
        for split in SPLITS
        if split == 1 or (tm <= 4 * g and tn <= 8 * g)
        if gemm_staging_bytes(tm, tn, 4 * g, dtype_bytes) <= hw.sram_bytes()
    ]
    if not rows:
        raise ValueError(
            f"hardware {hw.name!r}: no GEMM tile of granule {g} fits "
            f"{hw.sram_kib_per_unit:g} KiB of SRAM per unit"
        )
    return np.asarray(rows, dtype=np.float64)


def attention_candidates(hw: HardwareEnvelope, head_dim: int, dtype_bytes: int) -> np.ndarray:
    """(C, 3) float array of [q, kv, split] attention tiles that fit SRAM, for the autotuner."""
    g = hw.tile_granule
    qs = sorted({max(g, 64), max(g, 128)})
    kvs = sorted({max(g, 32), max(g, 64), max(g, 128)})
    rows = [
        (tq, tkv, split)
        for tq in qs
        for tkv in kvs
        for split in (*SPLITS, 64)
        if attention_staging_bytes(tq, tkv, head_dim, dtype_bytes) <= hw.sram_bytes()
    ]
    if not rows:
        raise ValueError(
            f"hardware {hw.name!r}: no attention tile fits {hw.sram_kib_per_unit:g} KiB of SRAM"
        )
    return np.asarray(rows, dtype=np.float64)


def default_gemm_tile(hw: HardwareEnvelope, dtype_bytes: int) -> GemmTile:
    """The untuned tile a generic (fallback) path uses: 128x128 (or one granule), k two granules,
    halved until it fits SRAM."""
    g = hw.tile_granule
    size = max(g, 128)
    while size > g and gemm_staging_bytes(size, size, 2 * g, dtype_bytes) > hw.sram_bytes():
        size //= 2
    return GemmTile(size, size, 2 * g)


def default_attention_tile(hw: HardwareEnvelope, head_dim: int, dtype_bytes: int) -> AttentionTile:
    """The untuned attention tile of the generic path: 64-row query and KV blocks (or a granule)."""
    g = hw.tile_granule
    size = max(g, 64)
    while size > g and attention_staging_bytes(size, size, head_dim, dtype_bytes) > hw.sram_bytes():
        size //= 2
    return AttentionTile(size, size)


def check_gemm_tile(op: str, tile: GemmTile, hw: HardwareEnvelope, dtype_bytes: int) -> None:
    """Raise a one-line ValueError naming `op` if `tile` is not valid on `hw`."""
    g = hw.tile_granule
    for dim in ("m", "n", "k"):
        value = getattr(tile, dim)
        if not isinstance(value, int) or value < 1 or value % g:
            raise ValueError(
                f"tiles.{op}.{dim}={value!r}: must be a positive multiple of {hw.name}'s "
                f"tile granule {g}"
            )
    if tile.split not in SPLITS:
        raise ValueError(f"tiles.{op}.split={tile.split!r}: must be one of {SPLITS}")
    need = gemm_staging_bytes(tile.m, tile.n, tile.k, dtype_bytes)
    if need > hw.sram_bytes():
        raise ValueError(
            f"tiles.{op}: {tile.label()} stages {need / 1024:g} KiB per unit, over {hw.name}'s "
            f"{hw.sram_kib_per_unit:g} KiB of SRAM"
        )


def check_attention_tile(
    op: str, tile: AttentionTile, hw: HardwareEnvelope, head_dim: int, dtype_bytes: int
) -> None:
    """Raise a one-line ValueError naming `op` if the attention `tile` is not valid on `hw`."""
    g = hw.tile_granule
    for dim in ("q", "kv"):
        value = getattr(tile, dim)
        if not isinstance(value, int) or value < 1 or value % g:
            raise ValueError(
                f"tiles.{op}.{dim}={value!r}: must be a positive multiple of {hw.name}'s "
                f"tile granule {g}"
            )
    if tile.split not in (*SPLITS, 64):
        raise ValueError(f"tiles.{op}.split={tile.split!r}: must be one of {(*SPLITS, 64)}")
    need = attention_staging_bytes(tile.q, tile.kv, head_dim, dtype_bytes)
    if need > hw.sram_bytes():
        raise ValueError(
            f"tiles.{op}: {tile.label()} holds {need / 1024:g} KiB per unit, over {hw.name}'s "
            f"{hw.sram_kib_per_unit:g} KiB of SRAM"
        )
