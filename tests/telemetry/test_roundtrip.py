"""The same telemetry through CSV, TSV, Parquet, NDJSON and a JSON array gives identical frames."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from model.telemetry import read_kernel_telemetry

FILES = ["a100_gemm_bf16.csv", "a100_attention_bf16.csv", "a100_llama2_7b_layer_ops.csv"]


@pytest.mark.parametrize("name", FILES)
def test_formats_give_identical_frames(name: str, measured: Path, tmp_path: Path) -> None:
    source = measured / name
    plain = pl.read_csv(source)
    plain.write_parquet(tmp_path / "t.parquet")
    plain.write_ndjson(tmp_path / "t.ndjson")
    plain.write_csv(tmp_path / "t.tsv", separator="\t")
    (tmp_path / "t.json").write_text(json.dumps(plain.to_dicts()))
    reference = read_kernel_telemetry(source, source="shared")
    for copy in ("t.parquet", "t.ndjson", "t.tsv", "t.json"):
        other = read_kernel_telemetry(tmp_path / copy, source="shared")
        assert other.frame.equals(reference.frame), copy
        assert other.report.counts == reference.report.counts, copy
        assert np.array_equal(other.provenance.file_row, reference.provenance.file_row), copy


def test_lines_per_format(measured: Path, tmp_path: Path) -> None:
    plain = pl.read_csv(measured / FILES[0]).head(50)
    plain.write_ndjson(tmp_path / "t.ndjson")
    plain.write_parquet(tmp_path / "t.parquet")
    plain.write_csv(tmp_path / "t.csv")
    csv_lines = read_kernel_telemetry(tmp_path / "t.csv").provenance.line
    ndjson_lines = read_kernel_telemetry(tmp_path / "t.ndjson").provenance.line
    parquet_lines = read_kernel_telemetry(tmp_path / "t.parquet").provenance.line
    assert csv_lines.tolist() == list(range(2, 52))  # header is line 1
    assert ndjson_lines.tolist() == list(range(1, 51))
    assert parquet_lines.tolist() == [0] * 50  # unknown


def test_normalized_frame_survives_parquet(measured: Path, tmp_path: Path) -> None:
    """A normalized frame (enum dtypes, nulls) written and read back is the same frame."""
    tel = read_kernel_telemetry(measured / FILES[2])
    tel.frame.write_parquet(tmp_path / "n.parquet")
    back = read_kernel_telemetry(tmp_path / "n.parquet")
    assert back.frame.equals(tel.frame)
    assert back.report.counts == {}


def test_reads_are_deterministic(measured: Path, tmp_path: Path) -> None:
    """The same files read twice give byte-identical frames (as Parquet) and equal reports."""
    paths = [measured / name for name in FILES]
    first, second = read_kernel_telemetry(paths), read_kernel_telemetry(paths)
    first.frame.write_parquet(tmp_path / "a.parquet")
    second.frame.write_parquet(tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert first.report == second.report
    assert np.array_equal(first.provenance.line, second.provenance.line)
