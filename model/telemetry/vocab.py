"""The vocabulary of kernel telemetry: ops, the shape columns each op needs, dtypes, kinds.

Follows the schema of shared/data/measured/README.md. Spellings seen in other tools (`bfloat16`,
`torch.float16`, `silu_and_mul`) are mapped to one canonical name.
"""

from __future__ import annotations

import polars as pl

OP_SHAPE_COLUMNS: dict[str, tuple[str, ...]] = {
    "gemm": ("m", "n", "k"),
    "attention_prefill": ("batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim"),
    "attention_decode": ("batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim"),
    "elementwise": ("kind", "rows", "cols"),
}
"""Shape columns each op requires; every other shape column must be empty on its rows."""

OPTIONAL_SHAPE_COLUMNS: dict[str, tuple[str, ...]] = {"gemm": ("batch",)}
"""Shape columns an op accepts but does not require: `batch` on a GEMM row is a batched GEMM
(batch independent m x n x k products in one kernel); empty means one."""

OPS = tuple(OP_SHAPE_COLUMNS)
"""Known op names."""

SHAPE_COLUMNS = (
    "m",
    "n",
    "k",
    "batch",
    "q_len",
    "kv_len",
    "heads",
    "kv_heads",
    "head_dim",
    "kind",
    "rows",
    "cols",
)
"""Every shape column, in schema order."""

INT_SHAPE_COLUMNS = tuple(c for c in SHAPE_COLUMNS if c != "kind")
"""Shape columns holding whole numbers >= 1."""

DTYPE_ALIASES: dict[str, str] = {
    **dict.fromkeys(("bf16", "bfloat16", "torch.bfloat16", "c10::bfloat16"), "bf16"),
    **dict.fromkeys(("fp16", "f16", "float16", "half", "torch.float16", "c10::half"), "fp16"),
    **dict.fromkeys(("fp32", "f32", "float32", "float", "torch.float32"), "fp32"),
    "tf32": "tf32",
    **dict.fromkeys(("fp8_e4m3", "fp8", "e4m3", "float8_e4m3fn", "c10::float8_e4m3fn"), "fp8_e4m3"),
    **dict.fromkeys(("fp8_e5m2", "e5m2", "float8_e5m2", "c10::float8_e5m2"), "fp8_e5m2"),
    **dict.fromkeys(("int8", "i8", "torch.int8"), "int8"),
}
"""Accepted dtype spellings (lower case) -> canonical dtype."""

DTYPES = tuple(dict.fromkeys(DTYPE_ALIASES.values()))
"""Canonical dtypes."""

KIND_ALIASES: dict[str, str] = {
    **dict.fromkeys(("rmsnorm", "rms_norm"), "rmsnorm"),
    **dict.fromkeys(("layernorm", "layer_norm"), "layernorm"),
    **dict.fromkeys(("rope", "rotary", "rotary_embedding"), "rope"),
    **dict.fromkeys(("silu_mul", "silu_and_mul", "act_and_mul", "swiglu"), "silu_mul"),
    "add": "add",
}
"""Accepted elementwise-kind spellings (lower case) -> canonical kind."""

KINDS = tuple(dict.fromkeys(KIND_ALIASES.values()))
"""Canonical elementwise kinds."""

OP_DTYPE = pl.Enum(OPS)
DTYPE_DTYPE = pl.Enum(DTYPES)
KIND_DTYPE = pl.Enum(KINDS)

KERNEL_SCHEMA: dict[str, pl.DataType] = {
    "op": OP_DTYPE,
    "dtype": DTYPE_DTYPE,
    **dict.fromkeys(("m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads"), pl.Int64),
    "head_dim": pl.Int64,
    "kind": KIND_DTYPE,
    "rows": pl.Int64,
    "cols": pl.Int64,
    "tp": pl.Int64,
    "layer_op": pl.String,
    "latency_us": pl.Float64,
    "hardware": pl.String,
    "source": pl.String,
}
"""Normalized kernel-telemetry columns and dtypes (shared/data/measured/README.md); times in us."""
