"""Shape buckets: which compiled bucket a runtime shape or a measured kernel belongs to.

A runtime seq_len runs in the smallest compiled bucket >= it (padded up) and falls back to the
generic path above the largest. A measured kernel's token count is the runtime shape it ran at:
GEMM `m` (tokens = batch x seq_len; at batch 1 the seq_len itself: the kernel schema carries no
batch for GEMMs), prefill attention `q_len`, decode attention `kv_len` (the KV length is the
decode runtime shape), elementwise `rows`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from model.compiler.service_table import bucket_of

TOKEN_COLUMNS: dict[str, str] = {
    "gemm": "m",
    "attention_prefill": "q_len",
    "attention_decode": "kv_len",
    "elementwise": "rows",
}
"""op -> the kernel-telemetry column holding its runtime shape in tokens."""

FALLBACK = -1
"""Bucket index of shapes above the largest compiled bucket (the generic path)."""


def kernel_tokens(frame: pl.DataFrame) -> np.ndarray:
    """(rows,) float runtime shape in tokens of each kernel row (`TOKEN_COLUMNS`)."""
    op = pl.col("op").cast(pl.String)
    expr = pl.lit(None, pl.Float64)
    for name, column in TOKEN_COLUMNS.items():
        if column in frame.columns:
            expr = pl.when(op == name).then(pl.col(column).cast(pl.Float64)).otherwise(expr)
    return frame.select(expr.alias("tokens")).to_series().fill_null(np.nan).to_numpy()


def bucket_index(compiled_shapes: Sequence[int], tokens: np.ndarray) -> np.ndarray:
    """(rows,) int64 index of the smallest compiled bucket >= tokens; `FALLBACK` above the
    largest (and where tokens are unknown)."""
    tokens = np.asarray(tokens, dtype=np.float64)
    known = np.isfinite(tokens)
    index = np.full(tokens.shape, FALLBACK, dtype=np.int64)
    if len(compiled_shapes):
        index[known] = bucket_of(compiled_shapes, np.ceil(tokens[known]).astype(np.int64))
    return index


def bucket_range(compiled_shapes: Sequence[int], index: int) -> tuple[int, int | None]:
    """(lowest, highest) tokens a bucket serves; highest is None for the fallback path."""
    shapes = list(compiled_shapes)
    if index == FALLBACK:
        return (shapes[-1] + 1 if shapes else 1), None
    return (shapes[index - 1] + 1 if index > 0 else 1), shapes[index]


def bucket_label(compiled_shapes: Sequence[int], index: int) -> str:
    """Text form of a bucket: `257-512` (compiled, padded to 512) or `>2048 (fallback)`."""
    low, high = bucket_range(compiled_shapes, index)
    if high is None:
        return f">{low - 1} (fallback)" if low > 1 else "all (fallback)"
    return f"{low}-{high}"


def bucket_entry(compiled_shapes: Sequence[int], index: int) -> dict:
    """The JSON description of a bucket: bucket (compiled shape or None), label, token range."""
    low, high = bucket_range(compiled_shapes, index)
    return {
        "bucket": None if index == FALLBACK else int(compiled_shapes[index]),
        "label": bucket_label(compiled_shapes, index),
        "tokens_low": low,
        "tokens_high": high,
        "fallback": index == FALLBACK,
    }
