"""The iteration-time table of a serving engine, from the compile-plan model, built once.

A mixed iteration is one forward pass of the decoder: its token-parallel kernels (norms, QKV,
out, gate/up, down projections, RoPE, residual adds) run over all m = d + p tokens of the batch
(d decode steps, p prefill tokens) and read the weights once; attention runs per sequence, over
each decode sequence's KV length and over the prefill chunk. So the table is separable:

    time(d, kv, p) = lin(m = d + p) + decode_attention(d, kv) + prefill_attention(p)

lin is the compiled plan costed as a prefill pass of m tokens (GEMMs at m rows: the weight
stream is paid once per iteration, which is why a decode step piggybacking on a prefill chunk
is nearly free when the chunk is compute-bound); decode_attention is the plan's attention
kernels in the decode phase at batch d over KV length kv; prefill_attention the same kernels in
the prefill phase over p tokens (causal within the chunk; earlier chunks' KV is not re-read:
a simplification, small while p and the prompt are close). Fused groups that hold attention
are costed whole in the attention terms (their other ops' share then scales with the same
tokens). Times are the plan's launch + compute + memory per pass times `layers`, as in the
dynamic batcher's `ServiceTable` (model/compiler/service_table.py).

Buckets pad up: all counts 1..64, then steps of 2^(1/4) (about 19% apart), as serving engines
capture graphs at a ladder of batch sizes. One vectorized `evaluate_plan` call per term.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from model.compiler.blocks import BlockSpec, weight_bytes
from model.compiler.fusion import fusion_groups
from model.compiler.hardware import HardwareEnvelope
from model.compiler.plan import evaluate_plan, resolve_tiles
from model.runtime.serving import IterationTable

DENSE_UP_TO = 64
"""Buckets hold every count up to here (decode batches are small and their time is steep)."""
STEP = 2.0**0.25
"""Ratio between buckets above DENSE_UP_TO: padding costs at most 19% of tokens."""


def bucket_edges(largest: int) -> np.ndarray:
    """(E,) int64 ascending bucket edges 1..DENSE_UP_TO, then x STEP, the last >= largest."""
    edges = list(range(1, min(largest, DENSE_UP_TO) + 1))
    while edges[-1] < largest:
        edges.append(min(largest, max(edges[-1] + 1, int(np.ceil(edges[-1] * STEP)))))
    return np.asarray(edges, np.int64)


def _kernel_ms(kernels, layers: int, pick) -> np.ndarray:
    total = np.zeros(len(kernels[0].launch_us))
    for k in kernels:
        if pick("attention" in k.ops):
            total = total + (k.launch_us + k.floor_us + k.compute_us + k.memory_us)
    return total * layers / 1e3


def build_iteration_table(
    block: BlockSpec,
    hardware: HardwareEnvelope,
    fusion: str | Sequence[Sequence[str]],
    tiles: Mapping | None,
    *,
    max_num_seqs: int,
    max_tokens: int,
    longest_sequence: int,
    compiled_shapes: Sequence[int] | None = None,
    dispatch_us: float = 0.0,
) -> IterationTable:
    """The engine's iteration table for a compiled plan (fusion preset or groups, explicit
    tiles; other tiles autotuned per bucket). max_tokens: largest prefill tokens in one
    iteration (max_num_batched_tokens, or the longest sequence when prompts go whole).
    compiled_shapes: the seq_len buckets the attention kernels were compiled for (None: every
    length); dispatch_us: extra host dispatch per kernel on the generic path (`fallback`)."""
    if block.kind != "llama-decoder":
        raise ValueError(f"block.kind must be llama-decoder for serving (got {block.kind!r})")
    prefill = replace(block, phase="prefill")
    decode = replace(block, phase="decode")
    explicit = resolve_tiles(prefill, hardware, tiles)
    groups = fusion_groups(prefill, fusion)
    biggest_p = max(max_tokens, longest_sequence)
    m_edges = bucket_edges(max_num_seqs + biggest_p)
    p_edges = bucket_edges(biggest_p)
    kv_edges = bucket_edges(longest_sequence)
    ones = np.ones(len(m_edges))
    lin = _kernel_ms(
        evaluate_plan(prefill, hardware, groups, explicit, ones, m_edges), block.layers,
        lambda has_attention: not has_attention,
    )  # fmt: skip
    pre, fallback = _prefill_attention(
        prefill, hardware, groups, explicit, p_edges, compiled_shapes, dispatch_us
    )
    d_grid, kv_grid = np.meshgrid(np.arange(1, max_num_seqs + 1), kv_edges, indexing="ij")
    dec = _kernel_ms(
        evaluate_plan(decode, hardware, groups, explicit, d_grid.ravel(), kv_grid.ravel()),
        block.layers, lambda has_attention: has_attention,
    ).reshape(d_grid.shape)  # fmt: skip
    return IterationTable(m_edges, lin, kv_edges, dec, p_edges, pre, fallback)


def _prefill_attention(block, hardware, groups, explicit, p_edges, compiled_shapes, dispatch_us):
    """(P,) ms of the attention kernels over a prefill chunk of each bucket's tokens, and (P,)
    whether it takes the generic path. As the dynamic batcher's service table: a chunk runs in
    the smallest compiled seq_len bucket >= it, padded to it; above the largest it runs the
    generic path (unfused, untuned tiles, extra dispatch) at its own length."""
    attention = lambda has_attention: has_attention  # noqa: E731 - the kernels to keep
    if not compiled_shapes:
        ones = np.ones(len(p_edges))
        plan = evaluate_plan(block, hardware, groups, explicit, ones, p_edges)
        return _kernel_ms(plan, block.layers, attention), np.zeros(len(p_edges), bool)
    buckets = np.asarray(sorted(compiled_shapes), np.int64)
    index = np.searchsorted(buckets, p_edges, side="left")
    fallback = index >= len(buckets)
    out = np.zeros(len(p_edges))
    if (~fallback).any():
        shape = buckets[index[~fallback]]
        plan = evaluate_plan(block, hardware, groups, explicit, np.ones(len(shape)), shape)
        out[~fallback] = _kernel_ms(plan, block.layers, attention)
    if fallback.any():
        shape = p_edges[fallback]
        plan = evaluate_plan(
            block, hardware, fusion_groups(block, "none"), {}, np.ones(len(shape)), shape,
            untuned=True, dispatch_us=dispatch_us,
        )  # fmt: skip
        out[fallback] = _kernel_ms(plan, block.layers, attention)
    return out, fallback


GPU_MEMORY_UTILIZATION = 0.9
"""Share of HBM the engine may use for weights and KV cache: vLLM's `gpu_memory_utilization`
default (vLLM engine arguments); the rest holds activations, graphs and the runtime."""


def kv_bytes_per_token(block: BlockSpec) -> int:
    """KV-cache bytes one token holds over all layers: keys and values of every KV head."""
    return 2 * block.kv_heads * block.head_dim * block.bytes_per_element * block.layers


def weight_bytes_total(block: BlockSpec) -> float:
    """Parameter bytes of the block's `layers` passes (embeddings and LM head are not part of
    the block: a Llama-3-8B's two 1.05 GB tables are left out, giving ~16k more KV tokens)."""
    return sum(weight_bytes(block, op) for op in block.op_names) * block.layers


def default_kv_cache_tokens(block: BlockSpec, hbm_gib: float) -> int:
    """KV-cache tokens per engine that fit in GPU_MEMORY_UTILIZATION of `hbm_gib` after the
    weights; ValueError (one line) when the HBM size is unknown or the weights do not fit."""
    if hbm_gib <= 0:
        raise ValueError(
            "batch_policy.kv_cache_tokens is required: the hardware gives no hbm_gib to size it"
        )
    free = hbm_gib * 2**30 * GPU_MEMORY_UTILIZATION - weight_bytes_total(block)
    if free <= 0:
        raise ValueError(
            f"batch_policy.kv_cache_tokens: the weights ({weight_bytes_total(block) / 2**30:.1f}"
            f" GiB) leave no room in {GPU_MEMORY_UTILIZATION:.0%} of {hbm_gib:g} GiB of HBM"
        )
    return int(free // kv_bytes_per_token(block))
