"""The sweep engine: one row per configuration, equal to running each alone, deterministic."""

from __future__ import annotations

import dataclasses
import itertools

import polars as pl
import pytest

from benchmarks.synthetic_decode import decode_table
from model.runtime.inputs import BatchPolicy
from model.runtime.simulate import simulate
from model.runtime.stats import headline
from model.runtime.sweep import headline_row, run_sweep
from tests.runtime.helpers import decode_config


def grid():
    table = decode_table("none")
    points = list(itertools.product((1, 4, 8), ("round-robin", "least-loaded"), (300.0, 900.0)))
    configs, labels = [], []
    for max_batch, placement, rate in points:
        base = decode_config(placement=placement, batch_policy=BatchPolicy(max_batch, 5.0))
        arrivals = dataclasses.replace(base.workload.arrivals, rate_per_s=rate)
        workload = dataclasses.replace(base.workload, arrivals=arrivals, requests=1500)
        configs.append(dataclasses.replace(base, workload=workload))
        labels.append({"max_batch": max_batch, "placement": placement, "rate_per_s": rate})
    return configs, [table] * len(configs), labels


def test_sweep_rows_equal_single_runs_in_grid_order() -> None:
    configs, tables, labels = grid()
    frame = run_sweep(configs, tables, labels, workers=2)
    assert isinstance(frame, pl.DataFrame) and frame.height == len(configs)
    assert frame.columns[:3] == ["max_batch", "placement", "rate_per_s"]
    for i in (0, 5, 11):
        alone = headline_row(headline(simulate(configs[i], tables[i])))
        row = frame.row(i, named=True)
        assert row["latency_p99_ms"] == alone["latency_p99_ms"]
        assert row["throughput_per_s"] == alone["throughput_per_s"]
        assert row["max_batch"] == labels[i]["max_batch"]


def test_sweep_is_deterministic_and_shows_load() -> None:
    configs, tables, labels = grid()
    a = run_sweep(configs, tables, labels, workers=2)
    b = run_sweep(configs, tables, labels, workers=1)
    assert a.equals(b)
    batched = a.filter(pl.col("max_batch") == 8).sort("rate_per_s")  # below capacity: keeps up
    assert batched["throughput_per_s"][0] < batched["throughput_per_s"][-1]
    single = a.filter(pl.col("max_batch") == 1)  # 8 cores x 1 / 33 ms < 300/s: overloaded
    assert (single["latency_p99_ms"] > batched["latency_p99_ms"].max()).all()


def test_sweep_checks_lengths() -> None:
    configs, tables, _ = grid()
    with pytest.raises(ValueError, match="one table and one label set per configuration"):
        run_sweep(configs, tables[:-1])
