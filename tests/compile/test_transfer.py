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


def test_decode_attention_packs_query_heads_where_the_library_does() -> None:
    from model.compiler.library import trtllm_packs_query_heads

    batch, kv_len = np.array([64.0] * 5), np.array([4096.0] * 5)
    heads, kv_heads = np.array([8, 32, 64, 128, 512.0]), np.array([8, 8, 8, 8, 8.0])
    # groups 1 and 4 stay per-head (under half an m16 fragment), 8 and 16 pack, 64 is over XQA's 32
    assert trtllm_packs_query_heads(A100, batch, kv_len, heads, kv_heads).tolist() == [
        False, False, True, True, False,
    ]  # fmt: skip
    # too few thread blocks to fill the device: 4 x (1 request x 1 KV head x 1 block) < 108 SMs
    assert not trtllm_packs_query_heads(A100, [1.0], [64.0], [16.0], [1.0])[0]
    from model.compiler.autotune import best_attention

    shape = ([64.0], [1.0], [4096.0], [64.0], [4.0], 128, False)  # group 16
    packed, _ = best_attention(A100, "bf16", *shape, pack_query_heads=True)
    per_head, _ = best_attention(A100, "bf16", *shape, pack_query_heads=False)
    # packed: K/V fed from the cache once per KV head instead of once per query head (HBM
    # reads K/V once either way: the other heads' re-reads hit the shared cache)
    assert packed.hbm_bytes[0] == per_head.hbm_bytes[0]
    assert packed.time_us[0] < per_head.time_us[0] / 2


@pytest.mark.parametrize(
    ("name", "best_published"),
    [("a100-sxm", 0.90), ("h100-sxm", 0.78), ("b200", 0.78), ("mi300x", 0.50)],
)
def test_a_large_gemm_never_beats_the_best_published_fraction_of_peak(name, best_published):
    hw = preset(name)
    size = 8192.0
    cost, _ = best_gemm(hw, "bf16", np.array([size]), size, size)
    fraction = 2 * size**3 / (cost.time_us[0] * 1e-6) / (hw.peak_tflops["bf16"] * 1e12)
    # the power limit and the pipeline together: close to, never above, the best published
    assert best_published - 0.1 < fraction <= best_published
