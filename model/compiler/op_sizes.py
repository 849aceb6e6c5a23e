"""A block's per-batch sizes as arrays: tokens, FLOPs, activation-tensor and KV-cache bytes.

Every function takes numpy arrays b (batch size, requests) and s (runtime shape: prompt tokens
for prefill, KV-cache length for decode) of one shape and returns a float64 array of that shape;
bytes are bytes, FLOPs are floating-point operations, per layer. The graph they size (ops,
tensors, GEMM dims) is `blocks.py`.
"""

from __future__ import annotations

import numpy as np

from model.compiler.blocks import OPS, BlockSpec, elementwise_flops, gemm_dims


def tokens(block: BlockSpec, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Rows m of every GEMM for batch size b at runtime shape s: b x s (prefill), b (decode)."""
    b = np.asarray(b, dtype=np.float64)
    return b * np.asarray(s, dtype=np.float64) if block.phase == "prefill" else b + 0.0 * s


def attention_dims(block: BlockSpec, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(q_len, kv_len) per request at runtime shape s: causal prompt, or 1 token over the cache."""
    s = np.asarray(s, dtype=np.float64)
    if block.phase == "prefill":
        return s, s
    return np.ones_like(s), s


def op_flops(block: BlockSpec, op: str, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Useful FLOPs of one op for a batch (no padding), per layer."""
    spec = OPS[op]
    m = tokens(block, b, s)
    if spec.kind == "gemm":
        n, k = gemm_dims(block, op)
        return 2.0 * m * n * k
    if spec.kind == "attention":
        q, kv = attention_dims(block, s)
        causal = 0.5 if block.phase == "prefill" else 1.0
        return 4.0 * np.asarray(b, np.float64) * block.heads * q * kv * block.head_dim * causal
    width = block.tensor_width(spec.writes[0])
    return m * width * elementwise_flops(spec.elementwise)


def kv_read_bytes(block: BlockSpec, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """KV-cache bytes the attention op reads for a batch, per layer.

    Prefill reads the prompt's keys and values (just written by qkv_proj/rope); decode reads the
    whole cache of s tokens, the new one included. The writes are counted at their producers.
    """
    per_token = 2.0 * block.kv_heads * block.head_dim * block.bytes_per_element
    return np.asarray(b, dtype=np.float64) * np.asarray(s, dtype=np.float64) * per_token


def tensor_bytes(block: BlockSpec, tensor: str, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Bytes of one activation tensor for a batch."""
    return tokens(block, b, s) * block.tensor_width(tensor) * block.bytes_per_element
