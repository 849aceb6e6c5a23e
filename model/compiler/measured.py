"""Where the shared measured kernel timings live, and a plain reader for them.

The files sit in `<shared>/data/measured/`, where `<shared>` is `$HANDOFF_SHARED_DIR` when set,
else `../shared` beside the repository root (the same relative path on CI). The robust ingestion
of other telemetry formats belongs to the telemetry package; these CSVs are read as they are.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

MEASURED_FILES = {
    "gemm": "a100_gemm_bf16.csv",
    "attention": "a100_attention_bf16.csv",
    "layer_ops": "a100_llama2_7b_layer_ops.csv",
}
"""Short name -> file of the public A100 measurements (see the README beside them)."""


def measured_dir() -> Path:
    """The folder of measured timings (raises a one-line FileNotFoundError if absent)."""
    shared = os.environ.get("HANDOFF_SHARED_DIR")
    root = Path(shared) if shared else Path(__file__).resolve().parents[2] / ".." / "shared"
    folder = (root / "data" / "measured").resolve()
    if not folder.is_dir():
        raise FileNotFoundError(
            f"measured data not found at {folder} (set HANDOFF_SHARED_DIR to the shared folder)"
        )
    return folder


def load_measured(name: str) -> pl.DataFrame:
    """One measured file (`gemm`, `attention` or `layer_ops`) as a polars frame."""
    if name not in MEASURED_FILES:
        raise ValueError(f"measured: unknown file {name!r} (known: {', '.join(MEASURED_FILES)})")
    return pl.read_csv(measured_dir() / MEASURED_FILES[name], infer_schema_length=None)
