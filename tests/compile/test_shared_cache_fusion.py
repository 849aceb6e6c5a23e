"""Fused GEMMs behind a tiled op (split over its tiles) and the shared cache's per-core share."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from model.compiler.blocks import BlockSpec
from model.compiler.fused import producer_grid, tiled_producer
from model.compiler.fusion import fusion_groups
from model.compiler.hardware import preset
from model.compiler.kernels import PARTIAL_BYTES, fused_gemm_phase
from model.compiler.plan import evaluate_plan
from model.compiler.service_table import FallbackPolicy, build_service_table
from model.service import ServiceTable

NPU = preset("npu-8c")
TINYLLAMA = BlockSpec("llama-decoder", "decode", "bf16", 2048, 32, 4, 64, 5632, 22)


def test_a_busy_core_holds_its_share_of_the_shared_cache() -> None:
    assert NPU.with_busy_cores(1) is NPU
    assert NPU.with_busy_cores(8).shared_cache_mib == pytest.approx(32.0 / 8)
    shared = NPU.with_busy_cores(3)
    assert dataclasses.replace(shared, shared_cache_mib=NPU.shared_cache_mib) == NPU
    for bad in (0, 9, 2.5):
        with pytest.raises(ValueError, match=r"busy_cores must be a whole number in \[1, 8\]"):
            NPU.with_busy_cores(bad)


def test_the_tiled_producer_is_found_through_elementwise_ops() -> None:
    mlp = ("mlp_norm", "gate_up_proj", "silu_mul")
    assert tiled_producer(TINYLLAMA, mlp, "act") == ("gate_up_proj", 0.5)  # SiLU-mul halves
    assert tiled_producer(TINYLLAMA, ("attention",), "attn_out") == ("attention", 1.0)
    assert tiled_producer(TINYLLAMA, ("attn_norm",), "xn") is None  # a norm: rows, not tiles
    assert tiled_producer(TINYLLAMA, (), "act") is None


def test_producer_grids_by_hand() -> None:
    b, s = np.array([8.0, 2.0]), np.array([512.0, 512.0])
    # gate_up 32x256 tiles over 8 decode rows: one row block, 11264 / 256 = 44 column tiles,
    # each holding 128 columns of silu(gate) * up
    gemm = producer_grid(TINYLLAMA, "gate_up_proj", np.array([[32, 256, 128, 1]] * 2), 0.5, b, s)
    assert gemm.row_blocks.tolist() == [1, 1] and gemm.rows.tolist() == [8, 2]
    assert gemm.chunk.tolist() == [128, 128] and gemm.chunks.tolist() == [44, 44]
    # decode attention packs the 8 query heads of a KV head: one tile per (request, KV head)
    attn = producer_grid(TINYLLAMA, "attention", np.array([[64, 32, 1]] * 2), 1.0, b, s)
    assert attn.row_blocks.tolist() == [8, 2] and attn.rows.tolist() == [1, 1]
    assert attn.chunk.tolist() == [512, 512] and attn.chunks.tolist() == [4, 4]
    # prefill of 256 tokens cannot pack 8 x 256 rows into 64: one head per tile, 4 query blocks
    prefill = dataclasses.replace(TINYLLAMA, phase="prefill")
    grid = producer_grid(prefill, "attention", np.array([[64, 32, 1]]), 1.0, [2.0], [256.0])
    assert grid.row_blocks.tolist() == [8] and grid.rows.tolist() == [64]
    assert grid.chunk.tolist() == [64] and grid.chunks.tolist() == [32]


def test_a_split_consumer_rereads_its_weight_per_wave_unless_the_cache_holds_it() -> None:
    """out_proj of 8 decode requests behind attention: 8 row blocks x 4 KV-head chunks of
    512 columns. W_o (8 MiB) fits half of the 32 MiB cache: read from HBM once. With 8 busy
    cores (4 MiB each) every wave of 4 tiles (2 row blocks) fetches its own copy: 4 copies."""
    n = k = 2048
    w_o = n * k * 2.0
    partials = 4 * 8 * n * PARTIAL_BYTES  # one fp32 partial per chunk and row
    out = 8 * n * 2.0
    kwargs = {"tokens": [8.0], "n": n, "k": k, "row_blocks": [8], "rows": [1], "chunk": [512],
              "chunks": [4]}  # fmt: skip
    alone = fused_gemm_phase(NPU, "bf16", **kwargs)
    busy = fused_gemm_phase(NPU.with_busy_cores(8), "bf16", **kwargs)
    assert alone.hbm_bytes[0, 0] == pytest.approx(w_o + 2 * partials + out)
    assert busy.hbm_bytes[0, 0] == pytest.approx(4 * w_o + 2 * partials + out)
    # MACs run on the 1-row blocks padded to the 32-row granule
    assert alone.exec_flops[0, 0] == pytest.approx(2 * 32 * 512 * n * 32)
    # each tile is fed its 2 MiB slice through its unit's port either way: same time, but
    # alone that is on-chip feed, busy it is HBM traffic that contends
    assert not alone.memory_bound[0, 0] and busy.memory_bound[0, 0]
    assert busy.time_us[0, 0] >= alone.time_us[0, 0] * (1 - 1e-12)
    feed_us = 512 * n * 2 / NPU.unit_feed_bps() * 1e6
    assert alone.time_us[0, 0] >= 8 * feed_us  # 32 tiles on 4 units: 8 waves


def test_recosting_with_the_compiled_tiles_reproduces_the_plan() -> None:
    groups = fusion_groups(TINYLLAMA, "aggressive")
    b, s = np.array([1, 3, 8]), np.array([256, 1024, 2048])
    tuned = evaluate_plan(TINYLLAMA, NPU, groups, {}, b, s)
    compiled = {op: rows for k in tuned for op, rows in k.tiles.items()}
    again = evaluate_plan(TINYLLAMA, NPU, groups, {}, b, s, compiled_tiles=compiled)
    for one, two in zip(tuned, again, strict=True):
        assert one.time_us.tobytes() == two.time_us.tobytes()
        assert one.hbm_bytes.tobytes() == two.hbm_bytes.tobytes()


def test_service_tables_per_busy_core_count() -> None:
    shapes = [256, 2048]
    table = build_service_table(TINYLLAMA, NPU, "aggressive", {}, shapes, FallbackPolicy(),
                                [1, 8], shapes)  # fmt: skip
    assert len(table.busy) == 7 and all(not t.busy for t in table.busy)
    assert table.for_busy_cores(1) is table and table.for_busy_cores(8) is table.busy[-1]
    assert table.for_busy_cores(99) is table.busy[-1]
    with pytest.raises(ValueError, match="busy_cores must be >= 1"):
        table.for_busy_cores(0)
    for more, fewer in zip(table.busy[1:], table.busy[:-1], strict=True):
        assert np.all(more.hbm_bytes >= fewer.hbm_bytes)  # less cache never moves fewer bytes
    one_core = build_service_table(TINYLLAMA, preset("npu-8c", cores=1, units_per_core=4),
                                   "aggressive", {}, shapes, FallbackPolicy(), [1], shapes)  # fmt: skip
    assert one_core.busy == ()
    with pytest.raises(ValueError, match=r"ServiceTable\.busy\[0\] must have this table's"):
        dataclasses.replace(table, busy=(one_core,))
    assert isinstance(table.busy[0], ServiceTable)
