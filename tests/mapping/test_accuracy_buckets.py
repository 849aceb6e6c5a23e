"""Compile-time mapping accuracy per op, shape bucket and tile."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from model.compiler.accuracy import accuracy_report, predict_kernels
from model.compiler.hardware import preset
from model.compiler.measured import load_measured
from model.mapping.accuracy import SHAPE_KEY, mapping_accuracy, predict_by_shape
from model.mapping.buckets import (
    FALLBACK,
    bucket_entry,
    bucket_index,
    bucket_label,
    kernel_tokens,
)
from model.mapping.synthetic import block_kernel_rows, synthetic_latency_us
from triage.scenario import build_scenario

A100 = preset("a100-sxm")
BUCKETS = [256, 512, 1024, 2048]


def test_bucket_index_pads_up_and_falls_back_above_the_largest() -> None:
    tokens = np.array([1, 256, 257, 2048, 2049, np.nan])
    assert bucket_index(BUCKETS, tokens).tolist() == [0, 0, 1, 3, FALLBACK, FALLBACK]
    assert bucket_label(BUCKETS, 1) == "257-512"
    assert bucket_label(BUCKETS, FALLBACK) == ">2048 (fallback)"
    assert bucket_entry(BUCKETS, 0) == {"bucket": 256, "label": "1-256", "tokens_low": 1,
                                        "tokens_high": 256, "fallback": False}  # fmt: skip


def test_kernel_tokens_read_the_runtime_shape_of_each_op() -> None:
    frame = pl.DataFrame(
        {
            "op": ["gemm", "attention_prefill", "attention_decode", "elementwise"],
            "m": [300, None, None, None],
            "q_len": [None, 700, 1, None],
            "kv_len": [None, 700, 900, None],
            "rows": [None, None, None, 40],
        }
    )
    assert kernel_tokens(frame).tolist() == [300, 700, 900, 40]


def test_predicting_each_shape_once_changes_nothing() -> None:
    frame = load_measured("layer_ops")[::7]
    repeated = pl.concat([frame, frame[::3], frame[::5]])
    pred = predict_by_shape(repeated, A100)
    np.testing.assert_array_equal(pred.predicted_us, predict_kernels(repeated, A100))
    key = [c for c in SHAPE_KEY if c in frame.columns]
    assert pred.shapes == frame.select(key).unique().height < repeated.height
    op = repeated["op"].to_numpy()
    assert all(pred.tile[op == "gemm"]) and not any(pred.tile[op == "elementwise"])


def test_overall_accuracy_matches_the_compare_command() -> None:
    frame = load_measured("gemm")
    acc = mapping_accuracy(frame, A100, BUCKETS)
    compare = accuracy_report(frame, A100)
    assert acc["rows"] == compare["rows"] == 9240
    assert acc["mdape"] == pytest.approx(compare["mdape"], rel=1e-12)
    assert sum(b["rows"] for b in acc["by_bucket"]) == 9240
    assert [b["label"] for b in acc["by_bucket"]][-1] == ">2048 (fallback)"
    assert sum(t["rows"] for t in acc["by_tile"]) == 9240
    assert acc["worst"][0]["ape"] >= acc["worst"][-1]["ape"]


def test_the_bucket_with_injected_error_is_named(mapping_packet) -> None:
    scenario = build_scenario(mapping_packet)
    seq = np.array([128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096])
    frame = block_kernel_rows(scenario.block, np.ones_like(seq), seq, hardware="h100-sxm",
                              source="test")  # fmt: skip
    latency = synthetic_latency_us(frame, scenario.hardware, seed=1, noise_cv=0.02)
    tokens = kernel_tokens(frame)
    slow = (tokens > 512) & (tokens <= 1024)  # the 513-1024 bucket runs 60% slower
    frame = frame.with_columns(latency_us=pl.Series(np.where(slow, 1.6, 1.0) * latency))
    acc = mapping_accuracy(frame, scenario.hardware, BUCKETS)
    most = acc["mispredicts_most"]
    assert most["bucket"]["label"] == "513-1024" and most["bucket"]["bias"] > 0.5
    assert most["op_bucket"]["label"] == "513-1024"
    others = [b for b in acc["by_bucket"] if b["label"] != "513-1024"]
    assert all(b["mdape"] < 0.05 for b in others)


def test_rows_the_envelope_cannot_predict_are_counted_not_fatal() -> None:
    frame = load_measured("gemm")[:50]
    fp8 = frame[:5].with_columns(dtype=pl.lit("fp8"))  # the A100 has no FP8 peak
    fast = frame[5:8].with_columns(latency_us=pl.lit(1e-3))  # faster than physics
    acc = mapping_accuracy(pl.concat([frame[8:], fp8, fast]), A100, BUCKETS)
    assert acc["unsupported_rows"] == 5 and acc["implausible_rows"] == 3
    assert acc["rows"] == 42
