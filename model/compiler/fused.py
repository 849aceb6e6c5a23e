"""Fused consumers: a GEMM whose A operand another tiled op of the same kernel produced.

Inside one kernel the tiles are independent: a tile sees only what it computed itself, and
nothing orders it after tiles on other units (ordering across tiles is what a kernel boundary
provides; the phases of a fused kernel run per tile). So a GEMM whose A was produced on chip by
a *tiled* op of its kernel (down_proj after gate_up_proj + silu_mul, out_proj after attention)
cannot hold the whole m-tile x K panel of A that its own tiling would need: the panel is spread
over the producer's tiles. The fused kernel runs the consumer inside the producer's tile grid, as
a split-K GEMM over the producer's column chunks (`kernels.fused_gemm_phase`): what a compiler
emitting the consumer per producer tile generates (the tile grid of a fusion is its hero op's).

`tiled_producer` finds that producer; `producer_grid` says how its tiles cut A. A produced by
elementwise ops alone (a norm in front of a GEMM) is not cut across tiles: each GEMM tile
normalizes its own rows, and `kernels.gemm_phase(a_on_chip=True)` holds them resident.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from model.compiler.blocks import OPS, BlockSpec, gemm_dims
from model.compiler.op_sizes import attention_dims, tokens


@dataclass(frozen=True)
class ProducerGrid:
    """How the producer's tiles cut the consumer's A operand; (P,) float arrays.

    Attributes:
        row_blocks: producer tiles along A's rows (m-tiles; requests x query blocks).
        rows: rows of A one tile holds (real rows, before granule padding).
        chunk: columns of A one tile holds (the consumer's reduction slice), elements.
        chunks: producer tiles along A's columns (the consumer's split-K factor).
    """

    row_blocks: np.ndarray
    rows: np.ndarray
    chunk: np.ndarray
    chunks: np.ndarray


def tiled_producer(
    block: BlockSpec, before: Sequence[str], tensor: str
) -> tuple[str, float] | None:
    """The GEMM or attention op among `before` (the earlier ops of a kernel) that `tensor`
    derives from through elementwise ops, and tensor's width over that op's output width (SiLU-
    multiply halves gate/up); None when `tensor` is not produced by a tiled op of the kernel."""
    writer = next((op for op in reversed(before) if tensor in OPS[op].writes), None)
    if writer is None:
        return None
    spec = OPS[writer]
    if spec.kind != "elementwise":
        width = sum(block.tensor_width(t) for t in spec.writes)
        return writer, block.tensor_width(tensor) / width
    earlier = before[: list(before).index(writer)]
    for source in spec.reads:
        found = tiled_producer(block, earlier, source)
        if found is not None:
            op, ratio = found
            return op, ratio * block.tensor_width(tensor) / block.tensor_width(source)
    return None


def producer_grid(
    block: BlockSpec,
    producer: str,
    tile_rows: np.ndarray,
    width_ratio: float,
    b: np.ndarray,
    s: np.ndarray,
) -> ProducerGrid:
    """The grid of `producer`'s tiles (its chosen tile per point, `tile_rows` (P, 4) GEMM
    [m, n, k, split] or (P, 3) attention [q, kv, split]) over the consumer's A at points (b, s).

    GEMM producer: m-tiles x n-tiles; a tile holds min(m, tokens) rows and n x width_ratio
    columns of A. Attention producer (A = attn_out): with grouped-query heads packed (all query
    heads of a KV head in one tile, as `kernels.attention_phase` packs them) a tile holds one
    request's tokens x (group x head_dim) columns, else q query rows x head_dim.
    """
    tile_rows = np.asarray(tile_rows, dtype=np.float64)
    if OPS[producer].kind == "gemm":
        rows = tokens(block, b, s)
        n, _ = gemm_dims(block, producer)
        tm, tn = tile_rows[:, 0], tile_rows[:, 1]
        return ProducerGrid(
            row_blocks=np.ceil(rows / tm),
            rows=np.minimum(tm, rows),
            chunk=tn * width_ratio,
            chunks=np.ceil(n / tn),
        )
    q_len, _ = attention_dims(block, s)
    batch = np.asarray(b, dtype=np.float64)
    tq = tile_rows[:, 0]
    group = block.heads / block.kv_heads
    packed = group * q_len <= tq
    return ProducerGrid(
        row_blocks=np.where(packed, batch, batch * np.ceil(q_len / tq)),
        rows=np.where(packed, q_len, np.minimum(tq, q_len)),
        chunk=np.where(packed, group, 1.0) * block.head_dim * width_ratio,
        chunks=np.where(packed, block.kv_heads, block.heads) + 0.0 * batch,
    )
