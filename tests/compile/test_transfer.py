"""Shapes and dtypes another device's tables bring: batched GEMMs, fp16 on a bf16-only device."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from model.compiler.accuracy import accuracy_report, predict_kernels
from model.compiler.autotune import best_gemm
from model.compiler.hardware import preset
from workbench.cli import main

A100 = preset("a100-sxm")


def _gemms(rows: list[tuple], dtype: str = "bf16") -> pl.DataFrame:
    frame = pl.DataFrame(rows, schema=["m", "n", "k", "batch", "latency_us"], orient="row")
    return frame.with_columns(op=pl.lit("gemm"), dtype=pl.lit(dtype))


def test_a_batch_of_one_is_the_plain_gemm_and_a_batch_shares_the_waves() -> None:
    m, n, k = np.array([64.0, 512.0, 4096.0]), 1024.0, 1024.0
    plain, _ = best_gemm(A100, "bf16", m, n, k)
    one, _ = best_gemm(A100, "bf16", m, n, k, batch=1.0)
    np.testing.assert_array_equal(plain.time_us, one.time_us)
    eight, _ = best_gemm(A100, "bf16", m, n, k, batch=8.0)
    # eight GEMMs take longer than one, and no longer than eight launches of one kernel each
    assert np.all(eight.time_us > plain.time_us)
    assert np.all(eight.time_us <= 8 * plain.time_us)
    # small GEMMs leave the device mostly idle: batching them fills it (much less than 8x)
    assert eight.time_us[0] < 3 * plain.time_us[0]
    assert np.all(eight.exec_flops >= 8 * 2 * m * n * k)


def test_predict_kernels_reads_the_batch_column_and_empty_means_one() -> None:
    frame = _gemms([(128, 4096, 4096, None, 30.0), (128, 4096, 4096, 1, 30.0),
                    (128, 4096, 4096, 16, 300.0)])  # fmt: skip
    predicted = predict_kernels(frame, A100)
    assert predicted[0] == predicted[1]
    assert predicted[2] > 4 * predicted[0]  # 16 weight-sized B operands to stream


def test_fp16_on_a_bf16_only_device_runs_as_bf16_with_a_note() -> None:
    tpu = preset("tpu-v4")
    assert "fp16" not in tpu.peak_tflops
    rows = [(1024, 1024, 1024, None, 50.0), (4096, 4096, 4096, None, 600.0)]
    fp16 = predict_kernels(_gemms(rows, "fp16"), tpu)
    bf16 = predict_kernels(_gemms(rows, "bf16"), tpu)
    np.testing.assert_array_equal(fp16, bf16)  # same bytes per element, same matrix path
    report = accuracy_report(_gemms(rows, "fp16"), tpu)
    assert report["notes"] == ["tpu-v4 lists no fp16 matrix peak; fp16 matmuls run as bf16"]
    assert accuracy_report(_gemms(rows, "bf16"), tpu)["notes"] == []


@pytest.mark.parametrize("hardware", ["tpu-v4", "b200", "mi300x"])
def test_the_command_line_compares_a_batched_fp16_table_on_any_preset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], hardware: str
) -> None:
    table = tmp_path / "batched_fp16.csv"
    table.write_text(
        "op,dtype,m,n,k,batch,latency_us\n"
        "gemm,fp16,128,128,128,32,9.5\n"
        "gemm,fp16,2048,2048,2048,4,400\n"
        "gemm,float16,1024,4096,1024,,60\n"
    )
    capsys.readouterr()
    assert main(["telemetry", "compare", str(table), "--hardware", hardware, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] + out["implausible_rows"] == 3
    assert out["mdape"] is None or np.isfinite(out["mdape"])
