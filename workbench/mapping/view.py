"""The Mapping step's numbers (textual-free): compile-time predictions against runtime behaviour,
per runtime shape and per compiled bucket.

Compile time says, from the `ServiceTable` alone: each runtime shape runs in the smallest
compiled bucket that holds it (`compiled_shape`), padded by 1 - shape / bucket, or on the
generic path when no bucket is large enough (`fallback`); a batch of b requests at that shape
takes `time_ms[b, shape]` on an idle device. The run says what happened: a request rides in a
batch padded to its largest member's shape, so it may run in a larger bucket than its own or
on the fallback path because of a batchmate, and its batch's service time includes HBM
contention and compile stalls. Both are averaged over the measured (post-warm-up) requests.

The closed-loop report (telemetry against these predictions, ranked retuning actions) is
`triage.mapping.report`; `with_candidate` adds one of its actions to the packet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from model.runtime.queues import table_rows
from model.runtime.simulate import RuntimeResult
from model.runtime.stats import measured
from model.service import ServiceTable
from packets.errors import Problem
from workbench.core.session import WorkingPacket, apply_edit

FALLBACK = -1  # bucket value standing for the generic path in BucketView.bucket


@dataclass(frozen=True)
class ShapeView:
    """One row per runtime shape of the service table (ascending). Shares are fractions 0..1,
    times are ms; rows with no measured request hold NaN in the runtime columns.

    Attributes:
        shapes: (S,) int64 runtime shape values (seq_len, tokens).
        declared_share: (S,) the packet's traffic weight of each shape.
        observed_share: (S,) share of measured requests drawn at each shape.
        bucket_shape: (S,) int64 compiled bucket the shape runs in alone (itself on fallback).
        predicted_fallback: (S,) bool, no compiled bucket holds the shape.
        predicted_padding: (S,) 1 - shape / bucket_shape.
        runtime_fallback: (S,) share of the shape's requests whose batch ran the generic path.
        runtime_padding: (S,) mean 1 - shape / bucket the request's batch actually ran in.
        padded_up: (S,) share of the shape's requests that ran in a larger bucket than their own.
        predicted_ms: (S,) mean idle-device batch time at the shape's own bucket and the batch
            size the request rode in (the compile-time prediction), ms.
        runtime_ms: (S,) mean service time of the request's batch as run, ms.
        p95_ms: (S,) p95 end-to-end latency of the shape's requests, ms.
    """

    shapes: np.ndarray
    declared_share: np.ndarray
    observed_share: np.ndarray
    bucket_shape: np.ndarray
    predicted_fallback: np.ndarray
    predicted_padding: np.ndarray
    runtime_fallback: np.ndarray
    runtime_padding: np.ndarray
    padded_up: np.ndarray
    predicted_ms: np.ndarray
    runtime_ms: np.ndarray
    p95_ms: np.ndarray

    @property
    def predicted_fallback_share(self) -> float:
        """Share of declared traffic compile time sends to the generic path."""
        return float(self.declared_share[self.predicted_fallback].sum())

    @property
    def runtime_fallback_rate(self) -> float:
        """Share of measured requests that ran the generic path."""
        return float(np.nansum(self.observed_share * self.runtime_fallback))

    @property
    def predicted_padding_mean(self) -> float:
        """Traffic-weighted padding share compile time expects."""
        return float(np.sum(self.declared_share * self.predicted_padding))

    @property
    def runtime_padding_mean(self) -> float:
        """Padding share of the measured requests as run."""
        return float(np.nansum(self.observed_share * self.runtime_padding))


@dataclass(frozen=True)
class BucketView:
    """One row per compiled bucket, then one for the generic path (bucket FALLBACK).

    Attributes:
        bucket: (K,) int64 compiled bucket shape (FALLBACK for the generic path).
        shapes: per bucket, the runtime shapes compile time maps to it.
        declared_share: (K,) declared traffic compile time sends to it.
        runtime_share: (K,) share of measured requests whose batch actually ran in it.
    """

    bucket: np.ndarray
    shapes: tuple[tuple[int, ...], ...]
    declared_share: np.ndarray
    runtime_share: np.ndarray


def _per_request(table: ServiceTable, result: RuntimeResult) -> pl.DataFrame:
    """The measured requests with their own and their batch's columns of the table."""
    req, batches = result.requests, result.batches
    keep = measured(result)
    shape = req.seq_len[keep]
    batch = req.batch[keep]
    own_col = table.shape_index(shape)
    ran_col = table.shape_index(batches.seq_len[batch])
    rows = table_rows(table, int(result.config.batch_policy.max_batch))[batches.size[batch]]
    own_bucket = table.compiled_shape[own_col]
    ran_bucket = np.where(
        batches.fallback[batch], batches.seq_len[batch], table.compiled_shape[ran_col]
    )
    return pl.DataFrame(
        {
            "col": own_col,
            "ran_bucket": np.where(batches.fallback[batch], FALLBACK, ran_bucket),
            "fallback": req.fallback[keep],
            "padding": 1.0 - shape / ran_bucket,
            "padded_up": ran_bucket > own_bucket,
            "predicted_ms": np.asarray(table.time_ms)[rows, own_col],
            "runtime_ms": req.service_ms[keep],
            "latency_ms": req.finish_ms[keep] - req.arrival_ms[keep],
        }
    )


def _declared(table: ServiceTable, values: list[int], weights: list[float]) -> np.ndarray:
    share = np.zeros(len(table.shapes))
    np.add.at(share, table.shape_index(np.asarray(values, dtype=np.int64)), weights)
    return share / share.sum()


def shape_view(
    table: ServiceTable, result: RuntimeResult, values: list[int], weights: list[float]
) -> ShapeView:
    """Compile-time prediction and runtime behaviour per shape of `table`, for a run of it
    (`values`/`weights`: the declared shape mix the run drew from)."""
    frame = _per_request(table, result)
    per_shape = (
        frame.group_by("col")
        .agg(
            pl.len().alias("n"),
            pl.col("fallback").mean(),
            pl.col("padding").mean(),
            pl.col("padded_up").mean(),
            pl.col("predicted_ms").mean(),
            pl.col("runtime_ms").mean(),
            pl.col("latency_ms").quantile(0.95, interpolation="linear").alias("p95_ms"),
        )
        .sort("col")
    )
    s = len(table.shapes)
    cols = per_shape["col"].to_numpy()

    def column(name: str) -> np.ndarray:
        out = np.full(s, np.nan)
        out[cols] = per_shape[name].cast(pl.Float64).to_numpy()
        return out

    counts = np.zeros(s)
    counts[cols] = per_shape["n"].to_numpy()
    shapes = np.asarray(table.shapes, dtype=np.int64)
    bucket_shape = np.asarray(table.compiled_shape, dtype=np.int64)
    return ShapeView(
        shapes=shapes,
        declared_share=_declared(table, values, weights),
        observed_share=counts / counts.sum(),
        bucket_shape=bucket_shape,
        predicted_fallback=np.asarray(table.fallback, dtype=bool),
        predicted_padding=1.0 - shapes / bucket_shape,
        runtime_fallback=column("fallback"),
        runtime_padding=column("padding"),
        padded_up=column("padded_up"),
        predicted_ms=column("predicted_ms"),
        runtime_ms=column("runtime_ms"),
        p95_ms=column("p95_ms"),
    )


def bucket_view(
    table: ServiceTable,
    result: RuntimeResult,
    compiled: list[int],
    values: list[int],
    weights: list[float],
) -> BucketView:
    """Declared traffic per compiled bucket (compile time) against the share of measured
    requests whose batch ran in it (`compiled`: the configuration's buckets, ascending)."""
    buckets = np.asarray([*compiled, FALLBACK], dtype=np.int64)
    own = np.where(np.asarray(table.fallback), FALLBACK, np.asarray(table.compiled_shape))
    declared = _declared(table, values, weights)
    ran = _per_request(table, result)["ran_bucket"].to_numpy()
    shapes = tuple(
        tuple(int(v) for v in np.asarray(table.shapes)[(own == b) & (declared > 0)])
        for b in buckets
    )
    return BucketView(
        bucket=buckets,
        shapes=shapes,
        declared_share=np.array([declared[own == b].sum() for b in buckets]),
        runtime_share=np.array([np.mean(ran == b) for b in buckets]),
    )


def with_candidate(working: WorkingPacket, overrides: dict) -> WorkingPacket | Problem:
    """The working packet with one more candidate (`overrides`: a candidate mapping as the
    packet format takes it, e.g. from `action_to_candidate`), checked like any edit."""
    candidates = [c.model_dump(mode="python", exclude_none=True) for c in working.packet.candidates]
    return apply_edit(working, ("candidates",), [*candidates, overrides])
