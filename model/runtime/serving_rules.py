"""The continuous scheduler's rules a packet check needs: its placements and the KV cache's size.

Numpy- and numba-free (plain ints and floats): `workbench check` and `workbench open` validate a
serving packet with this module before the first frame, and the scheduler itself
(`serving.py`, `serving_kernel.py`, `serving_table.py`) imports numba. Sizes are bytes, tokens
and GiB (2**30 bytes).
"""

from __future__ import annotations

from model.compiler.blocks import BlockSpec, weight_bytes

ROUND_ROBIN, RANDOM, LEAST_LOADED, CENTRAL = 0, 1, 2, 3
"""Placement codes the scheduler's kernel branches on (`serving_kernel.py`)."""

SERVING_PLACEMENTS = {
    "round-robin": ROUND_ROBIN,
    "random": RANDOM,
    "least-loaded": LEAST_LOADED,
    "central-queue": CENTRAL,
}
"""Placement policies of the continuous scheduler (shape-affinity has no meaning here)."""

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
