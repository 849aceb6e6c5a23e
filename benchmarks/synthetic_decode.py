"""A synthetic service table for a Llama-7B-like decode block on an 8-core NPU.

A stand-in until the compile-plan model's `build_service_table` lands: a per-kernel roofline
with launch costs, so the runtime benchmarks run on realistic magnitudes. Not calibrated; every
figure below is a stated assumption, not a fit.

Block (Llama-2-7B-like, bf16, decode, one new token per request, KV cache of seq_len tokens):
hidden 4096, 32 heads, 8 KV heads, head_dim 128, ffn 11008, `layers` repetitions.
NPU ("npu-8c"-like): 8 cores sharing 1,600 GB/s HBM; each core alone reaches at most
400 GB/s (so 4 busy memory phases saturate the device), 50 TFLOP/s bf16 per core, 5 us host
launch + 2 us device floor per kernel. A kernel moving B bytes reaches 400 GB/s * B / (B + 2 MB)
(a 5 us ramp at full rate). Fusion `none` launches one kernel per op; `aggressive` three per
layer (norm+QKV+RoPE, attention+projection+residual, the whole MLP). Fallback shapes run the
unfused plan at 70% of the achievable bandwidth (untuned default tiles) and pay the fallback's
per-kernel dispatch overhead.
"""

from __future__ import annotations

import numpy as np

from model.runtime.tables import service_table_from_arrays
from model.service import ServiceTable

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 4096, 32, 8, 128, 11008
BYTES = 2  # bf16
CORE_GBS, CORE_TFLOPS = 400.0, 50.0
RAMP_BYTES = 2e6
LAUNCH_US, FLOOR_US = 5.0, 2.0
UNTUNED_BANDWIDTH = 0.7

# Per op: (weight elements, activation elements read+written per token, FLOPs per token).
_QKV = (HEADS + 2 * KV_HEADS) * HEAD_DIM
_OPS = {
    "attn_norm": (HIDDEN, 2 * HIDDEN, 4 * HIDDEN),
    "qkv_proj": (HIDDEN * _QKV, HIDDEN + _QKV, 2 * HIDDEN * _QKV),
    "rope": (0, 2 * (HEADS + KV_HEADS) * HEAD_DIM, 6 * (HEADS + KV_HEADS) * HEAD_DIM),
    "attention": (0, 2 * HEADS * HEAD_DIM, 0),  # + KV cache bytes and FLOPs per cached token
    "out_proj": (HIDDEN * HIDDEN, 2 * HIDDEN, 2 * HIDDEN * HIDDEN),
    "attn_residual": (0, 3 * HIDDEN, HIDDEN),
    "mlp_norm": (HIDDEN, 2 * HIDDEN, 4 * HIDDEN),
    "gate_up_proj": (HIDDEN * 2 * FFN, HIDDEN + 2 * FFN, 4 * HIDDEN * FFN),
    "silu_mul": (0, 3 * FFN, 4 * FFN),
    "down_proj": (FFN * HIDDEN, FFN + HIDDEN, 2 * FFN * HIDDEN),
    "mlp_residual": (0, 3 * HIDDEN, HIDDEN),
}
FUSION = {
    "none": [[op] for op in _OPS],
    "aggressive": [
        ["attn_norm", "qkv_proj", "rope"],
        ["attention", "out_proj", "attn_residual"],
        ["mlp_norm", "gate_up_proj", "silu_mul", "down_proj", "mlp_residual"],
    ],
}


def _kernels(group, b, s):
    """(bytes, flops) of one fused kernel for batch b at KV length s; fused intermediates stay
    on chip, so only the group's first input and last output cross HBM."""
    weights = sum(_OPS[op][0] for op in group) * BYTES
    acts = (_OPS[group[0]][1] if len(group) == 1 else 2 * HIDDEN) * BYTES * b
    flops = sum(_OPS[op][2] for op in group) * b
    if "attention" in group:
        acts += 2 * KV_HEADS * HEAD_DIM * BYTES * b * s  # read K and V
        flops += 4 * HEADS * HEAD_DIM * b * s
    return weights + acts, flops


def _plan_parts(fusion, b, s, bandwidth_scale, extra_us):
    """(launch ms, compute-bound ms, memory-bound ms, memory-bound bytes, launches) per layer."""
    launch = compute = memory = mem_bytes = 0.0
    groups = FUSION[fusion]
    for group in groups:
        nbytes, flops = _kernels(group, b, s)
        t_mem = nbytes / (CORE_GBS * 1e6 * bandwidth_scale * nbytes / (nbytes + RAMP_BYTES))
        t_cmp = flops / (CORE_TFLOPS * 1e9)
        launch += (LAUNCH_US + FLOOR_US + extra_us) / 1000.0
        if t_cmp >= t_mem:
            compute += t_cmp
        else:
            memory += t_mem
            mem_bytes += nbytes
    return launch, compute, memory, mem_bytes, len(groups)


def decode_table(
    fusion: str = "none",
    *,
    max_batch: int = 8,
    shapes=(512, 1024, 2048, 4096),
    compiled_shapes=(512, 1024, 2048),
    layers: int = 32,
    dispatch_overhead_us: float = 20.0,
) -> ServiceTable:
    """Service table (batch sizes 1..max_batch x shapes) for the synthetic decode block."""
    sizes = np.arange(1, max_batch + 1)
    shapes = np.asarray(shapes, dtype=np.int64)
    fallback = shapes > max(compiled_shapes) if compiled_shapes else np.zeros(len(shapes), bool)
    grid = np.zeros((5, len(sizes), len(shapes)))
    for i, b in enumerate(sizes):  # 8 x 4 table cells, each a short sum over ops
        for j, s in enumerate(shapes):
            if fallback[j]:
                parts = _plan_parts("none", b, s, UNTUNED_BANDWIDTH, dispatch_overhead_us)
            else:
                padded = min(c for c in compiled_shapes if c >= s) if compiled_shapes else s
                parts = _plan_parts(fusion, b, padded, 1.0, 0.0)
            grid[:, i, j] = np.asarray(parts) * layers
    return service_table_from_arrays(
        sizes,
        shapes,
        grid[0],
        grid[1],
        grid[2],
        grid[3],
        launches=grid[4].astype(np.int64),
        compiled_shapes=compiled_shapes,
    )


def decode_all_compiled(fusion: str = "none", **kwargs) -> ServiceTable:
    """The same plan with every shape compiled (for the no-fallback counterfactual)."""
    shapes = kwargs.pop("shapes", (512, 1024, 2048, 4096))
    kwargs.pop("compiled_shapes", None)
    return decode_table(fusion, shapes=shapes, compiled_shapes=tuple(shapes), **kwargs)
