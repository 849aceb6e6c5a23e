"""flag_implausible: a pure split of rows at or above their physical minimum time."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from model.telemetry import (
    TelemetryError,
    flag_implausible,
    implausible_mask,
    read_kernel_telemetry,
)
from model.telemetry.errors import ExclusionReport, RowRef, build_report


def frame(latency: list[float]) -> pl.DataFrame:
    return pl.DataFrame(
        {"op": ["gemm"] * len(latency), "latency_us": latency},
        schema={"op": pl.String, "latency_us": pl.Float64},
    )


def test_rows_faster_than_the_bound_are_flagged_in_order() -> None:
    data = frame([5.0, 1.0, 3.0, 0.5, 8.0])
    bound = np.array([2.0, 2.0, 3.0, np.nan, 9.0])
    kept, count, examples = flag_implausible(data, bound)
    assert kept["latency_us"].to_list() == [5.0, 3.0, 0.5]  # equal to the bound is plausible
    assert count == 2
    assert examples.select("row", "latency_us", "min_time_us").rows() == [
        (1, 1.0, 2.0),
        (4, 8.0, 9.0),
    ]
    assert data.height == 5  # input untouched


def test_tolerance_and_example_cap() -> None:
    data = frame([9.5] * 10)
    bound = np.full(10, 10.0)
    assert flag_implausible(data, bound, rel_tolerance=0.06).flagged_count == 0
    split = flag_implausible(data, bound, rel_tolerance=0.04, max_examples=3)
    assert split.flagged_count == 10 and split.examples.height == 3 and split.kept.height == 0


def test_bad_bounds_are_programmer_errors() -> None:
    with pytest.raises(
        ValueError, match=r"min_time_us has shape \(2,\), expected one value per row \(3,\)"
    ):
        flag_implausible(frame([1.0, 2.0, 3.0]), np.ones(2))
    with pytest.raises(ValueError, match="rel_tolerance"):
        implausible_mask(np.ones(2), np.ones(2), rel_tolerance=1.0)


@given(
    arrays(np.float64, st.integers(0, 40), elements=st.floats(0.001, 1e6)),
    st.floats(0.001, 1e6),
)
def test_split_partitions_the_rows(latency: np.ndarray, scale: float) -> None:
    bound = np.full(len(latency), scale)
    kept, count, _ = flag_implausible(frame(latency.tolist()), bound)
    assert kept.height + count == len(latency)
    assert count == int(np.sum(latency < scale))
    assert (kept["latency_us"] >= scale).all()


def test_error_and_report_formats() -> None:
    assert str(TelemetryError("a.csv", "bad\nthing", line=3, column="m")) == "a.csv:3: m: bad thing"
    assert str(TelemetryError("a.parquet", "no rows")) == "a.parquet: no rows"
    assert str(RowRef("a.parquet", 0, 7, "m", "empty")) == "a.parquet: row 7: m: empty"
    report = build_report(
        5, 3, {"x": 2}, {"x": [RowRef("f", 2, 0, "c", "m")]}, {"x": "why", "y": "unused"}
    )
    assert report.counts == {"x": 2}
    assert report.lines() == ["3 of 5 rows kept, 2 excluded", "  x: 2 (why)", "    f:2: c: m"]
    with pytest.raises(AssertionError, match="do not add up"):
        build_report(5, 4, {"x": 2}, {}, {"x": "why"})
    assert isinstance(report, ExclusionReport)


def test_flagging_twice_merges_into_one_reason(write) -> None:
    rows = "".join(f"gemm,bf16,64,64,64,{t}\n" for t in (1.0, 2.0, 3.0, 4.0))
    tel = read_kernel_telemetry(write("k.csv", "op,dtype,m,n,k,latency_us\n" + rows), hardware="x")
    once = tel.flag_implausible(np.array([1.5, 1.5, 1.5, 1.5]))
    twice = once.flag_implausible(np.array([2.5, 2.5, 2.5]))
    assert twice.report.counts == {"implausible": 2}
    assert twice.report.rows_kept == twice.frame.height == 2
    assert [r.line for r in twice.report.exclusions[0].examples] == [2, 3]
    assert twice.report.rows_read == twice.report.rows_kept + twice.report.excluded
