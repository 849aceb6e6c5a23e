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

CHUNK_ROWS = 4096
"""Distinct shapes predicted per pass: the autotuner's (shapes x candidates) temporaries then
stay in cache; on 290,000 GEMM shapes 4,096-row chunks ran 3-6x faster than one pass."""

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
        supported: (rows,) bool, the envelope can predict the row (dtype with a peak, known
            elementwise kind).
        tile_code: (rows,) int32 index into `tile_labels` of the tile the autotuner picks, -1
            for elementwise or unpredictable rows.
        tile_labels: distinct tile labels (GEMM `MxNxK[/sS]`, attention `qQxkvKV[/sS]`).
        tokens: (rows,) runtime shape of each row in tokens (`buckets.kernel_tokens`).
        shapes: distinct shapes predicted.
    """

    predicted_us: np.ndarray
    fastest_us: np.ndarray
    supported: np.ndarray
    tile_code: np.ndarray
    tile_labels: tuple[str, ...]
    tokens: np.ndarray
    shapes: int

    @property
    def tile(self) -> np.ndarray:
        """(rows,) str tile label of each row ("" where there is none)."""
        labels = np.array([*self.tile_labels, ""], dtype=object)
        return labels[self.tile_code]


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


class _TileLabels:
    """Distinct tile labels in order of first use (codes index this list)."""

    def __init__(self) -> None:
        self.labels: list[str] = []

    def codes(self, chosen: np.ndarray, make) -> np.ndarray:
        """(P,) int32 code of each chosen tile row (`make` builds the tile: GemmTile...)."""
        distinct, inverse = np.unique(chosen, axis=0, return_inverse=True)
        codes = []
        for row in distinct:  # a few dozen candidate tiles at most
            label = make(*(int(v) for v in row)).label()
            if label not in self.labels:
                self.labels.append(label)
            codes.append(self.labels.index(label))
        return np.asarray(codes, dtype=np.int32)[inverse.ravel()]


def _predict_chunk(
    frame: pl.DataFrame, hw: HardwareEnvelope, labels: _TileLabels
) -> tuple[np.ndarray, np.ndarray]:
    """(predicted us, tile code) of each (supported) row, with the tile the autotuner picks as
    the predictor runs it. The GEMM search yields the GEMM rows' predictions too (device floor
    plus the phase, as `predict_kernels` computes them; a test holds the two equal), so it runs
    once; other rows go through `predict_kernels`."""
    ops = frame["op"].to_numpy()
    dtype = frame["dtype"].to_numpy()
    predicted = np.full(frame.height, np.nan)
    codes = np.full(frame.height, -1, dtype=np.int32)

    def col(name: str, sel: np.ndarray) -> np.ndarray:
        return frame[name].cast(pl.Float64).to_numpy()[sel]

    for d in sorted(set(dtype[ops == "gemm"].tolist())):
        sel = (ops == "gemm") & (dtype == d)
        cost, chosen = best_gemm(hw, d, col("m", sel), col("n", sel), col("k", sel))
        codes[sel] = labels.codes(chosen, GemmTile)
        predicted[sel] = hw.min_kernel_us + cost.time_us
    for op, causal in (("attention_prefill", True), ("attention_decode", False)):
        is_op = ops == op
        if not is_op.any():
            continue
        head_dim = frame["head_dim"].to_numpy()
        pairs = {(a, int(b)) for a, b in zip(dtype[is_op], head_dim[is_op], strict=True)}
        for d, hd in sorted(pairs):
            sel = is_op & (dtype == d) & (head_dim == hd)
            shape = [col(c, sel) for c in ("batch", "q_len", "kv_len", "heads", "kv_heads")]
            _, chosen = best_attention(hw, d, *shape, hd, causal, pack_query_heads=False)
            codes[sel] = labels.codes(chosen, AttentionTile)
    other = ops != "gemm"
    if other.any():
        predicted[other] = predict_kernels(frame.filter(pl.Series(other)), hw)
    return predicted, codes


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
    ids, first = shape_groups(frame)
    unique = as_plain_text(frame[first])
    ok = supported_rows(unique, hw)
    predicted = np.full(len(first), np.nan)
    fastest = np.full(len(first), np.nan)
    codes = np.full(len(first), -1, dtype=np.int32)
    labels: tuple[str, ...] = ()
    if ok.any():
        rows = unique.filter(pl.Series(ok))
        fastest[ok] = fastest_possible_us(rows, hw)
        labels_seen = _TileLabels()
        parts = [
            _predict_chunk(rows[start : start + CHUNK_ROWS], hw, labels_seen)
            for start in range(0, rows.height, CHUNK_ROWS)  # chunks: see CHUNK_ROWS
        ]
        predicted[ok] = np.concatenate([p for p, _ in parts])
        codes[ok] = np.concatenate([c for _, c in parts])
        labels = tuple(labels_seen.labels)
    tokens = kernel_tokens(unique)
    return KernelPredictions(
        predicted[ids], fastest[ids], ok[ids], codes[ids], labels, tokens[ids], len(first)
    )


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
    pred = predictions or predict_by_shape(frame, hw)
    measured = frame["latency_us"].cast(pl.Float64).to_numpy()
    plausible = pred.supported & (measured >= pred.fastest_us)
    tokens = pred.tokens
    bucket = bucket_index(compiled_shapes, tokens)
    keep = pl.Series(plausible)
    scored = pl.DataFrame(
        {
            "row": np.flatnonzero(plausible),
            "bucket": bucket[plausible],
            "tile": pred.tile_code[plausible],
            "ape": (np.abs(pred.predicted_us - measured) / measured)[plausible],
            "ratio": (measured / pred.predicted_us)[plausible],
        }
    ).with_columns(op=frame["op"].filter(keep))
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
    by_op = _metrics(scored, ["op"]).sort(pl.col("op").cast(pl.String))
    report["by_op"] = {str(m["op"]): _summary(m) for m in by_op.iter_rows(named=True)}
    order = pl.when(pl.col("bucket") == FALLBACK).then(10**9).otherwise(pl.col("bucket"))
    by_bucket = _metrics(scored, ["bucket"]).sort(order)
    report["by_bucket"] = [
        {**bucket_entry(compiled_shapes, m["bucket"]), **_summary(m)}
        for m in by_bucket.iter_rows(named=True)
    ]
    by_op_bucket = _metrics(scored, ["op", "bucket"]).sort([order, pl.col("op").cast(pl.String)])
    report["by_op_bucket"] = [
        {"op": str(m["op"]), **bucket_entry(compiled_shapes, m["bucket"]), **_summary(m)}
        for m in by_op_bucket.iter_rows(named=True)
    ]
    labels = pred.tile_labels
    by_tile = [
        {"op": str(m["op"]), "tile": labels[m["tile"]], **_summary(m)}
        for m in _metrics(scored.filter(pl.col("tile") >= 0), ["op", "tile"]).iter_rows(named=True)
    ]
    report["by_tile"] = sorted(by_tile, key=lambda t: (-t["mdape"], t["op"], t["tile"]))
    report["worst"] = _worst_rows(frame, scored, pred, measured, tokens, compiled_shapes, worst)
    report["mispredicts_most"] = _mispredicts_most(report)
    return report


def _worst_rows(frame, scored, pred, measured, tokens, compiled_shapes, worst: int) -> list[dict]:
    """The `worst` rows by APE (ties by row), with their shape, bucket and tile."""
    ape, rows = scored["ape"].to_numpy(), scored["row"].to_numpy()
    count = min(max(worst, 0), len(ape))
    if count == 0:
        return []
    top = np.argpartition(-ape, count - 1)[:count]
    top = top[np.lexsort((rows[top], -ape[top]))]
    shape_columns = [c for c in SHAPE_COLUMNS if c in frame.columns]
    picked = frame[rows[top]].select("op", *shape_columns)
    labels = pred.tile_labels
    out = []
    for j, values in zip(top, picked.iter_rows(named=True), strict=True):
        i = int(rows[j])
        code = int(pred.tile_code[i])
        out.append(
            {
                "row": i,
                **{
                    k: (str(v) if k in ("op", "kind") else v)
                    for k, v in values.items()
                    if v is not None
                },
                "tokens": int(tokens[i]),
                "bucket": bucket_entry(compiled_shapes, int(scored["bucket"][int(j)]))["label"],
                "tile": labels[code] if code >= 0 else None,
                "measured_us": float(measured[i]),
                "predicted_us": float(pred.predicted_us[i]),
                "ape": float(ape[j]),
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
