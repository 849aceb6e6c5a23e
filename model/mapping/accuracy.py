"""Compile-time mapping accuracy: measured kernels against the compile-plan model, per op, per
shape bucket of the compiled plan and per tile the autotuner picks.

The compiled plan was chosen with the model's predictions; where those predictions are wrong,
the plan (its buckets and tiles) may be wrong too. For every measured kernel row the model
predicts its time on the envelope (`model.compiler.accuracy.predict_kernels`) and names the tile
its autotuner picks for that shape (GEMM `MxNxK[/sS]`, attention `qQxkvKV[/sS]`, with the same
measured-software descriptors as the predictor). Rows are placed in the compiled bucket of their
token count (`buckets.py`). Predictions are a pure function of a row's shape, so each distinct
shape is predicted once and the result shared by its repeats (telemetry repeats shapes: a
bucketed plan runs a few shapes many times).

APE = |predicted - measured| / measured; MdAPE its median; bias = median(measured / predicted)
- 1 (positive: kernels run slower than the model predicts; the plan is optimistic there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from model.compiler.accuracy import (
    ELEMENTWISE_KERNELS,
    as_plain_text,
    fastest_possible_us,
    predict_kernels,
)
from model.compiler.autotune import best_attention, best_gemm
from model.compiler.hardware import DTYPE_BYTES, HardwareEnvelope
from model.compiler.tiles import AttentionTile, GemmTile
from model.mapping.buckets import FALLBACK, bucket_entry, bucket_index, kernel_tokens

SHAPE_KEY = ("op", "dtype", "m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads",
             "head_dim", "kind", "rows", "cols", "source")  # fmt: skip
"""Columns that decide a prediction (source: warm-cache measurements); rows equal on all of
them share one prediction."""

MIN_GROUP_ROWS = 5
"""A bucket, op or tile is named as mispredicting most only with at least this many rows."""

SHAPE_COLUMNS = ("m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim",
                 "kind", "rows", "cols", "layer_op")  # fmt: skip


@dataclass(frozen=True)
class KernelPredictions:
    """The model's view of every row of a kernel-telemetry frame.

    Attributes:
        predicted_us: (rows,) predicted device time, us (NaN for rows the model cannot predict).
        fastest_us: (rows,) physical minimum under the envelope's peaks, us.
        tile: (rows,) str tile the autotuner picks ("" for elementwise or unpredictable rows).
        supported: (rows,) bool, the envelope can predict the row (dtype with a peak, known
            elementwise kind).
        shapes: distinct shapes predicted.
    """

    predicted_us: np.ndarray
    fastest_us: np.ndarray
    tile: np.ndarray
    supported: np.ndarray
    shapes: int


def supported_rows(frame: pl.DataFrame, hw: HardwareEnvelope) -> np.ndarray:
    """(rows,) bool: rows the model can predict on `hw` (a dtype it has a peak for, and for
    elementwise rows a kernel kind it describes)."""
    frame = as_plain_text(frame)
    dtypes = [d for d in hw.peak_tflops if d in DTYPE_BYTES]
    ok = frame["dtype"].is_in(dtypes)
    if "kind" in frame.columns:
        elementwise = frame["op"] == "elementwise"
        ok = ok & (~elementwise | frame["kind"].is_in(list(ELEMENTWISE_KERNELS)).fill_null(False))
    return ok.fill_null(False).to_numpy()


def _labels(chosen: np.ndarray, make) -> np.ndarray:
    """Tile labels of (P, k) chosen rows, formatting each distinct tile once."""
    if len(chosen) == 0:
        return np.empty(0, dtype=object)
    distinct, inverse = np.unique(chosen, axis=0, return_inverse=True)
    labels = np.array([make(*(int(v) for v in row)).label() for row in distinct], dtype=object)
    return labels[inverse.ravel()]


def _tiles(frame: pl.DataFrame, hw: HardwareEnvelope) -> np.ndarray:
    """The tile the autotuner picks for each (supported) row, as the predictor runs it."""
    out = np.full(frame.height, "", dtype=object)
    ops = frame["op"].to_numpy()
    dtype = frame["dtype"].to_numpy()

    def col(name: str, sel: np.ndarray) -> np.ndarray:
        return frame[name].cast(pl.Float64).to_numpy()[sel]

    for d in sorted(set(dtype[ops == "gemm"].tolist())):
        sel = (ops == "gemm") & (dtype == d)
        _, chosen = best_gemm(hw, d, col("m", sel), col("n", sel), col("k", sel))
        out[sel] = _labels(chosen, GemmTile)
    for op, causal in (("attention_prefill", True), ("attention_decode", False)):
        is_op = ops == op
        if not is_op.any():
            continue
        head_dim = frame["head_dim"].to_numpy()
        for d, hd in sorted(
            {(a, int(b)) for a, b in zip(dtype[is_op], head_dim[is_op], strict=True)}
        ):
            sel = is_op & (dtype == d) & (head_dim == hd)
            shape = [col(c, sel) for c in ("batch", "q_len", "kv_len", "heads", "kv_heads")]
            _, chosen = best_attention(hw, d, *shape, hd, causal, pack_query_heads=False)
            out[sel] = _labels(chosen, AttentionTile)
    return out


def shape_groups(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(group id of every row, one representative row per group): rows equal on `SHAPE_KEY`
    share a group. Group ids are 0..G-1 in order of first appearance."""
    key = [c for c in SHAPE_KEY if c in frame.columns]
    groups = (
        frame.select(key)
        .with_row_index("row")
        .group_by(key, maintain_order=True)
        .agg(pl.col("row"))
        .with_row_index("group")
    )
    pairs = groups.select("group", "row").explode("row")
    ids = np.empty(frame.height, dtype=np.int64)
    ids[pairs["row"].to_numpy()] = pairs["group"].to_numpy()
    first = groups["row"].list.first().to_numpy().astype(np.int64)
    return ids, first


def predict_by_shape(frame: pl.DataFrame, hw: HardwareEnvelope) -> KernelPredictions:
    """Predict every row of `frame` on `hw`, each distinct shape once (see module docstring)."""
    frame = as_plain_text(frame)
    supported = supported_rows(frame, hw)
    ids, first = shape_groups(frame)
    unique = frame[first]
    ok = supported[first]
    predicted = np.full(len(first), np.nan)
    fastest = np.full(len(first), np.nan)
    tiles = np.full(len(first), "", dtype=object)
    if ok.any():
        rows = unique.filter(pl.Series(ok))
        predicted[ok] = predict_kernels(rows, hw)
        fastest[ok] = fastest_possible_us(rows, hw)
        tiles[ok] = _tiles(rows, hw)
    return KernelPredictions(predicted[ids], fastest[ids], tiles[ids], supported, len(first))


def _metrics(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """rows, mdape, mape, p90_ape, median_ratio, bias per group (APEs as fractions)."""
    return (
        frame.group_by(by, maintain_order=True)
        .agg(
            rows=pl.len(),
            mdape=pl.col("ape").median(),
            mape=pl.col("ape").mean(),
            p90_ape=pl.col("ape").quantile(0.9, interpolation="linear"),
            median_ratio=pl.col("ratio").median(),
        )
        .with_columns(bias=pl.col("median_ratio") - 1.0)
    )


def _summary(metrics: dict) -> dict:
    return {k: metrics[k] for k in ("rows", "mdape", "mape", "p90_ape", "median_ratio", "bias")}


def mapping_accuracy(
    frame: pl.DataFrame,
    hw: HardwareEnvelope,
    compiled_shapes: Sequence[int],
    *,
    worst: int = 10,
    predictions: KernelPredictions | None = None,
) -> dict:
    """Score the compile-time mapping on measured kernels: a plain dict (README schema,
    `accuracy`). Rows the envelope cannot predict and rows faster than physics allows are
    counted and left out of every metric. `predictions` reuses `predict_by_shape`'s result."""
    frame = as_plain_text(frame)
    pred = predictions or predict_by_shape(frame, hw)
    measured = frame["latency_us"].cast(pl.Float64).to_numpy()
    plausible = pred.supported & (measured >= pred.fastest_us)
    tokens = kernel_tokens(frame)
    bucket = bucket_index(compiled_shapes, tokens)
    scored = pl.DataFrame(
        {
            "row": np.flatnonzero(plausible),
            "op": frame["op"].to_numpy()[plausible],
            "bucket": bucket[plausible],
            "tile": pred.tile[plausible].astype(str),
            "ape": (np.abs(pred.predicted_us - measured) / measured)[plausible],
            "ratio": (measured / pred.predicted_us)[plausible],
        }
    )
    report: dict = {
        "hardware": hw.name,
        "compiled_shapes": [int(s) for s in compiled_shapes],
        "rows_read": frame.height,
        "unsupported_rows": int((~pred.supported).sum()),
        "implausible_rows": int((pred.supported & ~plausible).sum()),
        "distinct_shapes": pred.shapes,
    }
    if scored.height == 0:
        return {**report, "rows": 0, "mdape": None, "mape": None, "p90_ape": None,
                "median_ratio": None, "bias": None, "by_op": {}, "by_bucket": [],
                "by_op_bucket": [], "by_tile": [], "worst": [], "mispredicts_most": {}}  # fmt: skip
    overall = _metrics(scored.with_columns(all=pl.lit(0)), ["all"]).row(0, named=True)
    report.update(_summary(overall))
    report["by_op"] = {
        m["op"]: _summary(m) for m in _metrics(scored, ["op"]).sort("op").iter_rows(named=True)
    }
    order = pl.when(pl.col("bucket") == FALLBACK).then(10**9).otherwise(pl.col("bucket"))
    by_bucket = _metrics(scored, ["bucket"]).sort(order)
    report["by_bucket"] = [
        {**bucket_entry(compiled_shapes, m["bucket"]), **_summary(m)}
        for m in by_bucket.iter_rows(named=True)
    ]
    by_op_bucket = _metrics(scored, ["op", "bucket"]).sort([order, "op"])
    report["by_op_bucket"] = [
        {"op": m["op"], **bucket_entry(compiled_shapes, m["bucket"]), **_summary(m)}
        for m in by_op_bucket.iter_rows(named=True)
    ]
    tiles = scored.filter(pl.col("tile") != "")
    by_tile = _metrics(tiles, ["op", "tile"]).sort(
        ["mdape", "op", "tile"], descending=[True, False, False]
    )
    report["by_tile"] = [{"op": m["op"], "tile": m["tile"], **_summary(m)}
                         for m in by_tile.iter_rows(named=True)]  # fmt: skip
    report["worst"] = _worst_rows(frame, scored, pred, measured, tokens, compiled_shapes, worst)
    report["mispredicts_most"] = _mispredicts_most(report)
    return report


def _worst_rows(frame, scored, pred, measured, tokens, compiled_shapes, worst: int) -> list[dict]:
    top = scored.sort(["ape", "row"], descending=[True, False]).head(max(worst, 0))
    shape_columns = [c for c in SHAPE_COLUMNS if c in frame.columns]
    out = []
    for entry in top.iter_rows(named=True):
        i = entry["row"]
        shape = {c: frame[c][i] for c in shape_columns if frame[c][i] is not None}
        out.append(
            {
                "row": i,
                "op": entry["op"],
                **shape,
                "tokens": int(tokens[i]),
                "bucket": bucket_entry(compiled_shapes, entry["bucket"])["label"],
                "tile": entry["tile"] or None,
                "measured_us": float(measured[i]),
                "predicted_us": float(pred.predicted_us[i]),
                "ape": float(entry["ape"]),
            }
        )
    return out


def _worst_group(groups: list[dict]) -> dict | None:
    eligible = [g for g in groups if g["rows"] >= MIN_GROUP_ROWS]
    return max(eligible, key=lambda g: g["mdape"]) if eligible else None


def _mispredicts_most(report: dict) -> dict:
    """The bucket, op-in-bucket and tile with the highest MdAPE (>= MIN_GROUP_ROWS rows)."""
    out = {}
    for key, groups in (
        ("bucket", report["by_bucket"]),
        ("op_bucket", report["by_op_bucket"]),
        ("tile", report["by_tile"]),
    ):
        worst = _worst_group(groups)
        if worst is not None:
            out[key] = worst
    return out
