"""KernelMemo: kernels kept between plan evaluations give the tables a fresh build gives, bit for
bit, and a tile edit costs only the kernel holding the edited op again."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from model.compiler.blocks import BlockSpec
from model.compiler.fusion import fusion_groups
from model.compiler.hardware import preset
from model.compiler.plan import KernelMemo, evaluate_plan
from model.compiler.service_table import FallbackPolicy, build_service_table
from model.compiler.tiles import GemmTile, resolve_tiles
from model.service import ServiceTable
from packets.examples import example_names, example_path
from packets.load import load_packet
from triage.scenario import build_scenario

DECODE_8B = BlockSpec("llama-decoder", "decode", "bf16", 4096, 32, 8, 128, 14336, 32)


def assert_same_table(got: ServiceTable, want: ServiceTable) -> None:
    """Every array equal in dtype and bytes, busy-core levels included (`busy` is left out of
    ServiceTable's own equality)."""
    for f in dataclasses.fields(ServiceTable):
        if f.name == "busy":
            continue
        a, b = getattr(got, f.name), getattr(want, f.name)
        assert a.dtype == b.dtype and a.shape == b.shape, f.name
        assert a.tobytes() == b.tobytes(), f.name
    assert len(got.busy) == len(want.busy)
    for a, b in zip(got.busy, want.busy, strict=True):
        assert_same_table(a, b)


def model_scenarios():
    for name in example_names():
        scenario = build_scenario(load_packet(example_path(name)), None)
        if scenario.uses_model:
            yield name, scenario


@pytest.mark.parametrize("name", [name for name, _ in model_scenarios()])
def test_tables_from_kept_kernels_are_the_fresh_tables(name: str) -> None:
    """Each example's plan table and all-compiled table, with a memo empty, then full."""
    scenario = dict(model_scenarios())[name]
    memo = KernelMemo()
    for shapes in (scenario.compiled_shapes, scenario.all_compiled_shapes):
        fresh = scenario._table(shapes)
        assert_same_table(scenario._table(shapes, memo), fresh)
        misses = memo.misses
        assert_same_table(scenario._table(shapes, memo), fresh)
        assert memo.misses == misses  # the second build reused every kernel


def test_a_tile_edit_costs_only_its_kernel_again() -> None:
    """Unfused plan: one kernel per op. Changing down_proj's tile re-costs one kernel per
    evaluation (the compiled path at each busy-core level), never the generic path's."""
    hw = preset("npu-8c")
    memo = KernelMemo()
    args = (DECODE_8B, hw, "none")
    buckets, shapes, sizes = [512, 1024], [300, 512, 1024, 4096], list(range(1, 9))
    policy = FallbackPolicy(dispatch_overhead_us=3.0)

    def table(tiles, memo=None):
        return build_service_table(*args, tiles, buckets, policy, sizes, shapes, memo=memo)

    before = {"down_proj": GemmTile(64, 128, 64)}
    after = {"down_proj": GemmTile(128, 128, 64)}
    table(before, memo)
    hits, misses = memo.hits, memo.misses
    edited = table(after, memo)
    assert_same_table(edited, table(after))
    costed, reused = memo.misses - misses, memo.hits - hits
    alone = KernelMemo()
    table(after, alone)  # every kernel of every evaluation (paths x busy-core levels) costed
    evaluations = alone.misses // len(fusion_groups(DECODE_8B, "none"))
    assert costed + reused == alone.misses
    assert 1 <= costed <= evaluations  # at most the edited op's kernel, once per evaluation


def test_kept_kernels_are_read_only_and_the_memo_is_bounded() -> None:
    hw = preset("npu-8c")
    groups = fusion_groups(DECODE_8B, "none")  # one kernel per op
    n = len(groups)
    b, s = np.array([1.0, 2.0, 4.0]), np.array([512.0, 512.0, 512.0])
    tiles = resolve_tiles(DECODE_8B, hw, {})
    fresh = evaluate_plan(DECODE_8B, hw, groups, tiles, b, s)
    small = KernelMemo(entries=n - 1)
    evaluate_plan(DECODE_8B, hw, groups, tiles, b, s, memo=small)
    assert small.misses == n and len(small._kept) == n - 1  # the oldest kernel went
    memo = KernelMemo(entries=n)
    evaluate_plan(DECODE_8B, hw, groups, tiles, b, s, memo=memo)
    kept = evaluate_plan(DECODE_8B, hw, groups, tiles, b, s, memo=memo)
    assert (memo.hits, memo.misses) == (n, n)
    for got, want in zip(kept, fresh, strict=True):
        for f in dataclasses.fields(got):
            value = getattr(got, f.name)
            if isinstance(value, np.ndarray):
                assert value.tobytes() == getattr(want, f.name).tobytes(), f.name
                assert not value.flags.writeable, f.name
        assert all(not rows.flags.writeable for rows in got.tiles.values())
    evaluate_plan(DECODE_8B, hw, groups, tiles, np.array([1.0, 2.0, 8.0]), s, memo=memo)
    assert memo.misses == 2 * n  # other points: every kernel costed again
