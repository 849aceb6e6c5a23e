"""Tile shapes: the candidates an autotuner searches, explicit tiles, and their SRAM footprint.

A GEMM tile is an m x n output block stepping k elements of the reduction at a time, with an
optional split-K factor (the reduction cut into `split` slices run as separate tiles and summed).
An attention tile is a block of `q` query rows against `kv`-long key/value blocks, with an
optional KV split (flash-decoding). Tiles are double-buffered: two k-steps of operands are
staged in SRAM at once (`STAGES`). Accumulators live in registers/accumulator memory and are
not charged to SRAM.

Numpy-free (plain ints and tuples): a packet check validates tiles with this module alone, before
`workbench open` paints its first frame. The autotuner's candidate arrays are in `autotune.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from model.compiler.blocks import OPS, BlockSpec
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


def gemm_tile_rows(hw: HardwareEnvelope, dtype_bytes: int) -> tuple[tuple[int, int, int, int], ...]:
    """(m, n, k, split) of each GEMM tile the autotuner searches: those that fit SRAM.

    m ranges over granule x {1, 2, 4, 8, 16} up to 256 (or one granule when that is larger),
    n over the same from two granules, k is four granules, split over SPLITS. Split-K is a
    device for small output tiles (few tiles to spread), so only tiles up to 4 x 8 granules
    are offered split. ValueError when none fits.
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
    return tuple(rows)


def attention_tile_rows(
    hw: HardwareEnvelope, head_dim: int, dtype_bytes: int
) -> tuple[tuple[int, int, int], ...]:
    """(q, kv, split) of each attention tile the autotuner searches: those that fit SRAM.
    ValueError when none fits."""
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
    return tuple(rows)


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


def resolve_tiles(
    block: BlockSpec, hw: HardwareEnvelope, tiles: Mapping[str, Tile | Mapping] | None
) -> dict[str, Tile]:
    """Validate a tile plan (op -> GemmTile/AttentionTile or a {m,n,k}/{q,kv} mapping).

    Raises a one-line ValueError naming the op for an unknown op, an op that is not a GEMM or
    attention, a wrong tile kind, or a tile invalid on `hw` (granule, SRAM).
    """
    out: dict[str, Tile] = {}
    b = block.bytes_per_element
    for op, tile in (tiles or {}).items():
        if op not in block.op_names:
            raise ValueError(f"tiles.{op}: not an op of a {block.kind} block")
        kind = OPS[op].kind
        if isinstance(tile, Mapping):
            keys = set(tile)
            try:
                if kind == "gemm" and keys <= {"m", "n", "k", "split"}:
                    tile = GemmTile(**tile)
                elif kind == "attention" and keys <= {"q", "kv", "split"}:
                    tile = AttentionTile(**tile)
            except TypeError as err:
                raise ValueError(f"tiles.{op}: {err}") from None
        if kind == "gemm" and isinstance(tile, GemmTile):
            check_gemm_tile(op, tile, hw, b)
        elif kind == "attention" and isinstance(tile, AttentionTile):
            check_attention_tile(op, tile, hw, block.head_dim, b)
        else:
            want = {"gemm": "{m, n, k}", "attention": "{q, kv}"}.get(kind)
            if want is None:
                raise ValueError(f"tiles.{op}: {op} is elementwise and takes no tile")
            raise ValueError(f"tiles.{op}: a {kind} op takes a {want} tile, got {tile!r}")
        out[op] = tile
    return out
