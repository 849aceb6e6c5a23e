"""The three shared measured CSVs load with only the exclusions their content explains."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import polars as pl

from model.telemetry import KERNEL_SCHEMA, flag_implausible, read_kernel_telemetry

GEMM = "a100_gemm_bf16.csv"
ATTENTION = "a100_attention_bf16.csv"
LAYER_OPS = "a100_llama2_7b_layer_ops.csv"

A100_HBM_GBS = 2039.0
"""A100-SXM4-80GB peak HBM bandwidth, GB/s (shared/data/measured/README.md, NOTES.md)."""


def test_gemm_file_loads_whole(measured: Path) -> None:
    tel = read_kernel_telemetry(measured / GEMM)
    assert tel.frame.schema == pl.Schema(KERNEL_SCHEMA)
    assert tel.frame.height == 9240  # the README's row count
    assert tel.report.counts == {}
    assert tel.frame["op"].unique().to_list() == ["gemm"]
    assert tel.frame.select(pl.sum_horizontal(pl.col("m", "n", "k").null_count())).item() == 0
    assert tel.frame.select(pl.col("batch", "kind", "rows").is_not_null().any()).row(0) == (
        False,
        False,
        False,
    )


def test_attention_file_loads_whole(measured: Path) -> None:
    tel = read_kernel_telemetry(measured / ATTENTION)
    assert tel.frame.height == 9890
    assert tel.report.counts == {}
    assert sorted(tel.frame["op"].unique().cast(pl.String).to_list()) == [
        "attention_decode",
        "attention_prefill",
    ]


def test_layer_ops_file_drops_only_exact_repeats(measured: Path) -> None:
    """Not predicted by the README: 497 rows repeat an earlier row in every column. Vidur swept
    num_tokens 2048 and 4096 twice per (op, tp), and its two RMSNorms per layer (input and
    post-attention, layer_op empty) often have the same shape and the same integer-us median."""
    path = measured / LAYER_OPS
    tel = read_kernel_telemetry(path)
    plain = pl.read_csv(path)
    assert tel.report.rows_read == plain.height == 9396
    assert tel.report.counts == {"duplicate": plain.height - plain.unique().height}
    assert tel.report.counts["duplicate"] == 497
    kinds = tel.frame.filter(pl.col("op") == "elementwise")["kind"].cast(pl.String)
    assert set(kinds.unique()) == {"rmsnorm", "rope", "silu_mul", "add"}
    gemm = tel.frame.filter(pl.col("op") == "gemm")
    assert gemm["kind"].null_count() == gemm.height
    assert gemm["tp"].is_in([1, 2, 4, 8]).all()


def test_lines_point_at_the_rows_they_came_from(measured: Path) -> None:
    paths = [measured / GEMM, measured / ATTENTION, measured / LAYER_OPS]
    tel = read_kernel_telemetry(paths)
    assert tel.frame.height == 9240 + 9890 + 9396 - 497
    assert np.bincount(tel.provenance.file_index).tolist() == [9240, 9890, 9396 - 497]
    lines = {p: list(csv.reader(p.read_text().splitlines())) for p in paths}
    for row in np.random.default_rng(7).choice(tel.frame.height, 40, replace=False):
        path = Path(tel.provenance.files[tel.provenance.file_index[row]])
        header, fields = lines[path][0], lines[path][tel.provenance.line[row] - 1]
        written = dict(zip(header, fields, strict=True))
        kept = tel.frame.row(int(row), named=True)
        assert float(written["latency_us"]) == kept["latency_us"]
        assert written["op"] == kept["op"]


def test_implausible_decode_rows_are_flagged(measured: Path) -> None:
    """The README: about 7% of decode rows imply more than peak HBM bandwidth if KV bytes are
    counted plainly. With that plain bound (K and V, bf16, at 2,039 GB/s) as min_time_us, the
    flagging finds exactly those rows."""
    tel = read_kernel_telemetry(measured / ATTENTION)
    decode = tel.frame["op"] == "attention_decode"
    kv_bytes = tel.frame.select(
        pl.col("batch") * pl.col("kv_len") * pl.col("kv_heads") * pl.col("head_dim") * 2 * 2
    ).to_series()
    min_time_us = np.where(decode.to_numpy(), kv_bytes.to_numpy() / (A100_HBM_GBS * 1e3), np.nan)
    kept, flagged, examples = flag_implausible(tel.frame, min_time_us)
    assert flagged == 351
    assert round(flagged / int(decode.sum()), 2) == 0.07
    assert kept.height == tel.frame.height - flagged
    assert (examples["latency_us"] < examples["min_time_us"]).all()
    assert (examples["op"] == "attention_decode").all()

    cleaned = tel.flag_implausible(min_time_us)
    assert cleaned.frame.equals(kept)
    assert cleaned.report.counts == {"implausible": 351}
    assert cleaned.report.rows_kept == kept.height
    first = cleaned.report.exclusions[0].examples[0]
    assert first.file.endswith(ATTENTION)
    assert first.line == tel.provenance.line[examples["row"][0]]
