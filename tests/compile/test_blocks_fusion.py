"""Blocks as operator graphs and fusion plans: FLOPs, bytes, launches, intermediates."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from model.compiler.blocks import (
    LLAMA_OPS,
    OPS,
    BlockSpec,
    gemm_dims,
    weight_bytes,
)
from model.compiler.fused import tiled_producer
from model.compiler.fusion import fusion_groups
from model.compiler.hardware import preset
from model.compiler.op_sizes import op_flops, tensor_bytes, tokens
from model.compiler.plan import evaluate_plan
from model.compiler.tiles import resolve_tiles
from model.compiler.worksheet import worksheet

LLAMA2_7B = BlockSpec("llama-decoder", "decode", "bf16", 4096, 32, 32, 128, 11008, 32)
GQA_8B = BlockSpec("llama-decoder", "decode", "bf16", 4096, 32, 8, 128, 14336, 32)


def test_block_op_names_follow_the_packet_contract() -> None:
    assert LLAMA2_7B.op_names == LLAMA_OPS
    mlp = BlockSpec("mlp", "prefill", "bf16", 4096, 32, 8, 128, 14336)
    attention = BlockSpec("attention", "decode", "fp16", 4096, 32, 8, 128, 14336)
    assert mlp.op_names == ("mlp_norm", "gate_up_proj", "silu_mul", "down_proj", "mlp_residual")
    assert attention.op_names == LLAMA_OPS[:6]


def test_op_flops_and_weights_match_hand_counts() -> None:
    b, s = np.array([4.0]), np.array([100.0])
    prefill = BlockSpec("llama-decoder", "prefill", "bf16", 4096, 32, 8, 128, 14336)
    m = 400  # 4 requests x 100 prompt tokens
    assert gemm_dims(prefill, "qkv_proj") == (4096 + 2 * 1024, 4096)
    assert op_flops(prefill, "qkv_proj", b, s)[0] == 2 * m * 6144 * 4096
    assert op_flops(prefill, "down_proj", b, s)[0] == 2 * m * 4096 * 14336
    # causal attention: 4 * batch * heads * q * kv * head_dim / 2
    assert op_flops(prefill, "attention", b, s)[0] == 4 * 4 * 32 * 100 * 100 * 128 / 2
    assert weight_bytes(prefill, "gate_up_proj") == 2 * 14336 * 4096 * 2
    decode = GQA_8B
    assert tokens(decode, b, s)[0] == 4  # one new token per request
    assert op_flops(decode, "attention", b, s)[0] == 4 * 4 * 32 * 1 * 100 * 128
    assert tensor_bytes(decode, "gu", b, s)[0] == 4 * 2 * 14336 * 2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("kind", "moe", "block.kind"),
        ("phase", "train", "block.phase"),
        ("dtype", "fp4", "block.dtype"),
        ("hidden", 0, "block.hidden must be a whole number >= 1"),
        ("kv_heads", 5, "must be a multiple of block.kv_heads"),
    ],
)
def test_bad_blocks_raise_one_line_errors(field: str, value, message: str) -> None:
    fields = {"kind": "llama-decoder", "phase": "decode", "dtype": "bf16", "hidden": 4096,
              "heads": 32, "kv_heads": 8, "head_dim": 128, "ffn_hidden": 14336}  # fmt: skip
    fields[field] = value
    with pytest.raises(ValueError, match=message):
        BlockSpec(**fields)


def test_presets_group_ops_as_documented() -> None:
    assert len(fusion_groups(GQA_8B, "none")) == 11
    assert fusion_groups(GQA_8B, "standard") == (
        ("attn_norm",), ("qkv_proj", "rope"), ("attention",), ("out_proj", "attn_residual"),
        ("mlp_norm",), ("gate_up_proj", "silu_mul"), ("down_proj", "mlp_residual"),
    )  # fmt: skip
    assert fusion_groups(GQA_8B, "aggressive")[2] == (
        "mlp_norm", "gate_up_proj", "silu_mul", "down_proj", "mlp_residual",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([["attn_norm"]], "leave out qkv_proj"),
        ([list(LLAMA_OPS), ["rope"]], "repeat rope"),
        ([list(LLAMA_OPS[1:]), ["attn_norm"]], "execution order"),
        ([[], list(LLAMA_OPS)], "group 0 is empty"),
        ([["attn_norm", "conv"]], "unknown op 'conv'"),
        ("medium", "unknown preset 'medium'"),
    ],
)
def test_bad_fusion_plans_name_the_problem(groups, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fusion_groups(GQA_8B, groups)


# Fixed GEMM tiles so that fusion is the only difference between the plans compared.
FIXED = {op: {"m": 64, "n": 128, "k": 64} for op in ("qkv_proj", "out_proj", "gate_up_proj",
                                                     "down_proj")}  # fmt: skip
FIXED["attention"] = {"q": 64, "kv": 64}


def _totals(block: BlockSpec, fusion, b: int, s: int):
    hw = preset("a100-sxm")
    kernels = evaluate_plan(
        block, hw, fusion_groups(block, fusion), resolve_tiles(block, hw, FIXED),
        np.array([b]), np.array([s]),
    )  # fmt: skip
    return len(kernels), sum(float(k.hbm_bytes[0]) for k in kernels)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_folding_elementwise_ops_cuts_launches_by_k_and_bytes_by_the_intermediates(phase) -> None:
    block = BlockSpec("llama-decoder", phase, "bf16", 4096, 32, 8, 128, 14336)
    b, s = 4, 256
    launches_none, bytes_none = _totals(block, "none", b, s)
    launches_std, bytes_std = _totals(block, "standard", b, s)
    folded = [op for g in fusion_groups(block, "standard") for op in g[1:]]
    assert folded == ["rope", "attn_residual", "silu_mul", "mlp_residual"]
    assert launches_none - launches_std == len(folded)
    # each folded op's on-chip input was written by its producer and read back: 2x its size
    bb, ss = np.array([b]), np.array([s])
    intermediates = ["q", "k", "o", "gu", "d"]
    saved = sum(2 * float(tensor_bytes(block, t, bb, ss)[0]) for t in intermediates)
    assert bytes_none - bytes_std == pytest.approx(saved, rel=1e-12)


def test_worksheet_shows_the_bottleneck_shift_of_folding() -> None:
    sheet = worksheet(GQA_8B, preset("a100-sxm"), "standard", FIXED, 1, 1024)
    by_ops = {tuple(k["ops"]): k for k in sheet["kernels"]}
    rope = by_ops[("qkv_proj", "rope")]
    assert rope["baseline_bounds"] == ["memory", "launch"]  # the standalone RoPE was launch-bound
    assert rope["bottleneck_shift"] == "memory+launch -> memory"
    totals = sheet["totals"]
    assert totals["baseline_launches_per_block"] - totals["launches_per_block"] == 4
    hw = preset("a100-sxm")
    assert totals["launch_overhead_saved_us"] == pytest.approx(
        4 * (hw.launch_overhead_us + hw.min_kernel_us)
    )


@st.composite
def partitions(draw):
    """A random ordered partition of the llama ops into contiguous groups."""
    cuts = draw(st.sets(st.integers(1, len(LLAMA_OPS) - 1)))
    edges = [0, *sorted(cuts), len(LLAMA_OPS)]
    return [list(LLAMA_OPS[a:z]) for a, z in itertools.pairwise(edges)]


def _split_consumers(block: BlockSpec, plan) -> set[str]:
    """GEMMs of a plan whose A operand another tiled op of their kernel produced."""
    return {
        op
        for group in plan
        for i, op in enumerate(group)
        if OPS[op].kind == "gemm" and tiled_producer(block, group[:i], OPS[op].reads[0])
    }


@settings(max_examples=25, deadline=None)
@given(plan=partitions(), merge=st.integers(0, 9))
def test_fusing_without_a_split_consumer_never_adds_launches_or_hbm_bytes(plan, merge) -> None:
    """Merging two neighbouring kernels removes one launch; unless it puts a GEMM behind
    another tiled op of its kernel (next test), it never adds HBM traffic."""
    block = BlockSpec("llama-decoder", "decode", "bf16", 2048, 16, 4, 64, 5632)
    if len(plan) < 2:
        plan = [list(LLAMA_OPS[:5]), list(LLAMA_OPS[5:])]
    i = merge % (len(plan) - 1)
    coarser = [*plan[:i], plan[i] + plan[i + 1], *plan[i + 2 :]]
    assume(_split_consumers(block, coarser) == _split_consumers(block, plan))
    launches, traffic = _totals(block, plan, 2, 512)
    launches_c, traffic_c = _totals(block, coarser, 2, 512)
    assert launches_c == launches - 1
    assert traffic_c <= traffic * (1 + 1e-12)


def test_a_gemm_behind_attention_in_its_kernel_pays_fp32_partials_per_kv_head() -> None:
    """Fusing out_proj behind attention: no tile holds all heads of a request, so each
    (request, KV head) tile multiplies its heads' output by its rows of W_o and writes fp32
    partials that a merge pass reads back. Against the separate kernels it saves the attn_out
    round trip and adds the partials twice, exactly (W_o fits A100's L2: read once)."""
    block = BlockSpec("llama-decoder", "decode", "bf16", 2048, 16, 4, 64, 5632)
    mlp = [[op] for op in LLAMA_OPS[5:]]
    apart = [list(LLAMA_OPS[:3]), ["attention"], ["out_proj"], *mlp]
    fused = [list(LLAMA_OPS[:3]), ["attention", "out_proj"], *mlp]
    assert _split_consumers(block, fused) == {"out_proj"}
    b, s = 2, 512
    _, traffic = _totals(block, apart, b, s)
    _, traffic_fused = _totals(block, fused, b, s)
    attn_out = float(tensor_bytes(block, "attn_out", np.array([b]), np.array([s]))[0])
    partials = block.kv_heads * b * block.hidden * 4.0  # fp32, one per KV head
    assert traffic_fused - traffic == pytest.approx(2 * partials - 2 * attn_out, rel=1e-12)


def test_every_op_reads_tensors_produced_earlier_or_the_block_input() -> None:
    seen = {"x"}
    for op in LLAMA_OPS:
        assert set(OPS[op].reads) <= seen, op
        seen |= set(OPS[op].writes)
