"""The worksheet's stable JSON form and its markdown rendering."""

from __future__ import annotations

import json

import pytest

from model.compiler.blocks import BlockSpec
from model.compiler.hardware import preset
from model.compiler.regimes import ErrorBands, shipped_bands
from model.compiler.worksheet import SCHEMA, band_op, worksheet, worksheet_markdown

KERNEL_KEYS = {
    "ops", "tiles", "launches", "flops", "exec_flops", "hbm_bytes", "spill_bytes", "reuse_ratio",
    "sram_kib", "sram_capacity_kib", "launch_us", "device_us", "time_us", "avg_hbm_gbs",
    "peak_hbm_gbs", "bound", "baseline_ops", "baseline_bound", "baseline_bounds",
    "bottleneck_shift", "band_us",
}  # fmt: skip
TOTAL_KEYS = {
    "launches_per_block", "baseline_launches_per_block", "launch_overhead_saved_us", "hbm_bytes",
    "baseline_hbm_bytes", "hbm_bytes_saved", "spill_bytes", "block_time_us",
    "baseline_block_time_us", "request_time_us", "baseline_request_time_us",
}  # fmt: skip


def test_worksheet_json_is_plain_stable_and_consistent() -> None:
    block = BlockSpec("llama-decoder", "decode", "bf16", 4096, 32, 8, 128, 14336, 32)
    args = (block, preset("npu-8c"), "aggressive", {}, 8, 1024)
    sheet = worksheet(*args)
    text = json.dumps(sheet, sort_keys=True)
    assert json.dumps(worksheet(*args), sort_keys=True) == text  # deterministic
    assert json.loads(text) == sheet  # plain types only
    assert sheet["schema"] == SCHEMA
    assert set(sheet["totals"]) == TOTAL_KEYS
    for kernel in sheet["kernels"]:
        assert set(kernel) == KERNEL_KEYS
        assert kernel["time_us"] == pytest.approx(kernel["launch_us"] + kernel["device_us"])
    totals = sheet["totals"]
    assert totals["block_time_us"] == pytest.approx(sum(k["time_us"] for k in sheet["kernels"]))
    assert totals["request_time_us"] == pytest.approx(32 * totals["block_time_us"])
    assert totals["hbm_bytes_saved"] == pytest.approx(
        totals["baseline_hbm_bytes"] - totals["hbm_bytes"]
    )
    # fused GEMMs behind a tiled op run inside its tiles, split over its column chunks: the
    # down projection over gate_up's n-tiles (each holds n / 2 columns of silu(gate) * up), the
    # output projection over the 8 (request, KV head) attention tiles of each request
    attn, mlp = sheet["kernels"][1], sheet["kernels"][-1]
    assert mlp["ops"][0] == "mlp_norm" and mlp["spill_bytes"] == 0
    tm, tn, _ = (int(v) for v in mlp["tiles"]["gate_up_proj"].split("x"))
    assert mlp["tiles"]["down_proj"] == f"{tm}x4096x{tn // 2}/s{2 * 14336 // tn}"
    assert attn["tiles"]["out_proj"] == "32x4096x512/s8"
    assert all(k["sram_kib"] <= k["sram_capacity_kib"] for k in sheet["kernels"])
    # W_o (32 MiB) is over half the shared cache: every pair of requests streams it from HBM
    w_o = 4096 * 4096 * 2
    assert attn["hbm_bytes"] > 4 * w_o
    text = worksheet_markdown(sheet)
    assert "| 2 | mlp_norm + gate_up_proj + silu_mul + down_proj + mlp_residual |" in text
    assert "Launches per block: 3 (baseline 11)" in text


def test_worksheet_rejects_bad_points() -> None:
    block = BlockSpec("mlp", "decode", "bf16", 4096, 32, 8, 128, 14336)
    with pytest.raises(ValueError, match="batch and seq_len must be whole numbers >= 1"):
        worksheet(block, preset("a100-sxm"), "standard", {}, 0, 128)


def test_every_kernel_carries_the_band_of_its_op_and_time_class() -> None:
    """The band scales the device time by the p10 / p90 of measured/predicted among the
    residuals of kernels like it (same op class and predicted-time class); launch is host time,
    outside the band's measurements."""
    block = BlockSpec("llama-decoder", "prefill", "bf16", 4096, 32, 8, 128, 14336, 32)
    sheet = worksheet(block, preset("a100-sxm"), "standard", {}, 2, 512)
    bands = shipped_bands()
    assert sheet["bands"] == bands.provenance
    for kernel in sheet["kernels"]:
        op = band_op(block, kernel["ops"])
        ratios = bands.ratios([op], [kernel["device_us"]])[0]
        low, high = kernel["band_us"]
        assert low == pytest.approx(kernel["launch_us"] + kernel["device_us"] * ratios[0])
        assert high == pytest.approx(kernel["launch_us"] + kernel["device_us"] * ratios[2])
        assert low < high
    assert {band_op(block, k["ops"]) for k in sheet["kernels"]} == {
        "gemm", "attention_prefill", "elementwise"
    }  # fmt: skip
    # Bands from a calibration replace the shipped ones.
    narrow = ErrorBands({"all": (100, 0.95, 1.0, 1.05)}, "a calibration")
    sheet = worksheet(block, preset("a100-sxm"), "standard", {}, 2, 512, bands=narrow)
    first = sheet["kernels"][0]
    assert first["band_us"][1] == pytest.approx(first["launch_us"] + 1.05 * first["device_us"])
    assert "10-90% us" in worksheet_markdown(sheet) and "a calibration" in worksheet_markdown(sheet)
