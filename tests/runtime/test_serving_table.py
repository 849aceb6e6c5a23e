"""The serving iteration table from memoized plan cells: any extent, the same bits as a fresh
build, and only the new cells evaluated when an edit raises a bound."""

from __future__ import annotations

import pytest

from model.compiler.blocks import BlockSpec
from model.compiler.hardware import preset
from model.runtime.serving import IterationTable
from model.runtime.serving_table import IterationCosts, build_iteration_table

LLAMA_8B = BlockSpec("llama-decoder", "decode", "bf16", 4096, 32, 8, 128, 14336, 32)
LONGEST = 4096 + 512
FIELDS = ("m_edges", "lin_ms", "kv_edges", "dec_attn_ms", "p_edges", "pre_attn_ms", "pre_fallback")


def assert_same_bits(a: IterationTable, b: IterationTable) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name


@pytest.mark.parametrize(
    "compiled", [None, [512, 1024, 2048]], ids=["every-length", "compiled-buckets"]
)
def test_tables_from_kept_cells_match_fresh_builds_bit_for_bit(compiled) -> None:  # type: ignore[no-untyped-def]
    """Grow, shrink and grow again: every table equals a fresh build of its own extent (the
    last bucket edge of each extent is the extent itself, so it is evaluated when new)."""
    hw = preset("h100-sxm")
    costs = IterationCosts(
        LLAMA_8B, hw, "standard", {}, longest_sequence=LONGEST, compiled_shapes=compiled,
        dispatch_us=20.0,
    )  # fmt: skip
    for seqs, tokens in ((8, 2048), (64, 8192), (9, 8256), (64, 16384), (65, 3000), (8, 2048)):
        near = [(seqs + 3, tokens + 100), (seqs - 1, tokens - 1)]  # evaluated, not returned
        kept = costs.table(max_num_seqs=seqs, max_tokens=tokens, ahead=near)
        fresh = build_iteration_table(
            LLAMA_8B, hw, "standard", {}, max_num_seqs=seqs, max_tokens=tokens,
            longest_sequence=LONGEST, compiled_shapes=compiled, dispatch_us=20.0,
        )  # fmt: skip
        assert_same_bits(kept, fresh)
        assert kept.dec_attn_ms.shape[0] == seqs


def test_an_edit_that_raises_a_bound_evaluates_only_the_new_cells() -> None:
    costs = IterationCosts(LLAMA_8B, preset("h100-sxm"), "standard", {}, longest_sequence=LONGEST)
    costs.table(max_num_seqs=64, max_tokens=8192)
    first = costs.evaluated
    kv_buckets = len(costs.table(max_num_seqs=64, max_tokens=8192).kv_edges)
    assert costs.evaluated == first  # the same extent again: nothing new
    costs.table(max_num_seqs=64, max_tokens=8192 + 64)  # a budget step: its new last edges
    assert 0 < costs.evaluated - first <= 2
    before = costs.evaluated
    costs.table(max_num_seqs=65, max_tokens=8192 + 64)  # one more sequence: one decode row
    assert costs.evaluated - before == kv_buckets + 1  # and the m edge 65 + 8256
    before = costs.evaluated
    costs.table(max_num_seqs=32, max_tokens=4096)  # below what was seen: at most its last edges
    assert costs.evaluated - before <= 2
    assert first > 64 * kv_buckets  # the first table evaluated every cell


def test_the_table_refuses_a_block_it_cannot_cost() -> None:
    block = BlockSpec("mlp", "decode", "bf16", 4096, 32, 8, 128, 14336, 32)
    with pytest.raises(ValueError, match=r"block\.kind must be llama-decoder"):
        IterationCosts(block, preset("h100-sxm"), "standard", {}, longest_sequence=LONGEST)


def test_cells_evaluated_ahead_serve_the_next_arrow_steps_without_evaluating() -> None:
    costs = IterationCosts(LLAMA_8B, preset("h100-sxm"), "standard", {}, longest_sequence=LONGEST)
    steps = [(d, 0) for d in (1, 2, -1)] + [(0, d) for d in (1, 2, -1)]
    costs.table(max_num_seqs=64, max_tokens=8192, ahead=[(64 + a, 8192 + b) for a, b in steps])
    before = costs.evaluated
    for seqs, tokens in ((65, 8192), (66, 8192), (63, 8192), (64, 8193), (64, 8194), (64, 8191)):
        costs.table(max_num_seqs=seqs, max_tokens=tokens)
    assert costs.evaluated == before
    costs.table(max_num_seqs=64, max_tokens=8195)  # beyond what was asked ahead
    assert costs.evaluated > before


def test_reserved_cells_serve_every_neighbour_without_evaluating() -> None:
    """What the app does while idle: the cells of the next arrow steps, evaluated in one pass
    even though the current table needed none."""
    costs = IterationCosts(LLAMA_8B, preset("h100-sxm"), "standard", {}, longest_sequence=LONGEST)
    costs.table(max_num_seqs=64, max_tokens=8192)
    first = costs.evaluated
    near = [(64 + d, 8192) for d in (1, 2, -1, 10)] + [(64, 8192 + d) for d in (1, 2, -1, 10)]
    costs.reserve(near)
    assert costs.evaluated > first
    reserved = costs.evaluated
    for seqs, tokens in near:
        fresh = build_iteration_table(
            LLAMA_8B, preset("h100-sxm"), "standard", {}, max_num_seqs=seqs, max_tokens=tokens,
            longest_sequence=LONGEST,
        )  # fmt: skip
        assert_same_bits(costs.table(max_num_seqs=seqs, max_tokens=tokens), fresh)
    assert costs.evaluated == reserved
