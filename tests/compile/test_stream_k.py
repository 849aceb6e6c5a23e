"""Stream-K GEMM schedule (library.py "Schedules", kernels.stream_k_schedule) against theory:
no wave-quantization step, equal to waves where tiles fill whole waves, fix-up bytes counted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from model.compiler.accuracy import predict_kernels
from model.compiler.calibration import calibrate, schedule_candidates
from model.compiler.hardware import preset
from model.compiler.kernels import PARTIAL_BYTES, gemm_phase, prologue_fill_s
from model.compiler.library import LIBRARIES, library_for_metadata
from model.compiler.measured import load_measured
from packets.examples import example_path
from packets.load import load_packet
from triage.scenario import build_scenario

A100 = preset("a100-sxm")
STREAM_K = A100.with_overrides(gemm_library="cutlass-streamk-sm80")
TILE = np.array([[128, 128, 64, 1]], dtype=float)
UNITS = A100.units_per_core


def _cost(hw, tiles: int, k: int):
    """One row of `tiles` 128x128 output tiles (m = 128 x tiles, n = 128)."""
    return gemm_phase(hw, "bf16", np.array([128.0 * tiles]), 128.0, float(k), TILE)


def _brute_force_inner_boundaries(tiles: int, k_steps: int, units: int) -> int:
    """Range ends that fall inside a tile, by listing every block's range (first ones longer)."""
    iterations = tiles * k_steps
    blocks = min(iterations, units)
    q, r = divmod(iterations, blocks)
    ends, position = [], 0
    for j in range(blocks - 1):
        position += q + (1 if j < r else 0)
        ends.append(position)
    return sum(1 for e in ends if e % k_steps)


def test_stream_k_has_no_step_where_waves_start_a_new_wave() -> None:
    k = 16384  # a long reduction: one tile's main loop (~200 us) dwarfs a fill
    waves = [_cost(A100, t, k).time_us[0, 0] for t in range(UNITS - 3, UNITS + 4)]
    stream = [_cost(STREAM_K, t, k).time_us[0, 0] for t in range(UNITS - 3, UNITS + 4)]
    wave_steps, stream_steps = np.diff(waves), np.diff(stream)
    # one tile past a full wave costs waves a whole extra tile's main loop...
    assert wave_steps.max() > 0.5 * waves[3]
    # ... and stream-K only its share of one more tile's iterations, plus (where a boundary
    # starts to fall inside tiles) the fix-up's fill and partials and one more epilogue
    assert np.abs(stream_steps).max() < 0.1 * wave_steps.max()
    # over two waves' worth of tiles, stream-K's time grows about in proportion to the work
    t1, t2 = _cost(STREAM_K, UNITS, k).time_us[0, 0], _cost(STREAM_K, UNITS * 3 // 2, k).time_us
    assert t2[0, 0] == pytest.approx(1.5 * t1, rel=0.03)


@pytest.mark.parametrize("waves_count", [1, 2, 3])
def test_stream_k_equals_waves_when_tiles_fill_whole_waves(waves_count: int) -> None:
    k = 4096
    tiles = waves_count * UNITS
    waves, stream = _cost(A100, tiles, k), _cost(STREAM_K, tiles, k)
    fill_us = prologue_fill_s(A100, np.array(k)) * 1e6
    # the same main loops and epilogues; the persistent grid fills once instead of per wave,
    # and no range boundary falls inside a tile (no fix-up)
    assert stream.time_us[0, 0] == pytest.approx(
        waves.time_us[0, 0] - (waves_count - 1) * fill_us, rel=1e-12
    )
    assert stream.hbm_bytes[0, 0] == waves.hbm_bytes[0, 0]


@pytest.mark.parametrize("tiles,k", [(54, 16384), (107, 512), (109, 4096), (217, 1024), (5, 64)])
def test_fix_up_bytes_are_the_partial_tiles_written_and_read_back(tiles: int, k: int) -> None:
    k_steps = k // 64
    partials = _brute_force_inner_boundaries(tiles, k_steps, UNITS)
    extra = _cost(STREAM_K, tiles, k).hbm_bytes[0, 0] - _cost(A100, tiles, k).hbm_bytes[0, 0]
    assert extra == pytest.approx(2 * partials * 128 * 128 * PARTIAL_BYTES, rel=1e-12)
    if k_steps >= 2 and tiles % UNITS:
        assert partials > 0


def test_fewer_tiles_than_units_spread_their_reduction_over_every_unit() -> None:
    # 27 tiles on 108 SMs: waves leave 81 idle; stream-K gives each tile four blocks
    waves, stream = _cost(A100, 27, 16384), _cost(STREAM_K, 27, 16384)
    assert stream.time_us[0, 0] < 0.5 * waves.time_us[0, 0]
    assert stream.hbm_bytes[0, 0] > waves.hbm_bytes[0, 0]  # three partial tiles per tile


def test_packet_metadata_naming_stream_k_selects_the_generation_s_cutlass_kernels() -> None:
    h100, mi300x = preset("h100-sxm"), preset("mi300x")
    assert library_for_metadata(A100, "CUTLASS 3.5 (stream-K)", "") == "cutlass-streamk-sm80"
    assert library_for_metadata(h100, "cutlass streamk", "") == "cutlass-streamk-sm90"
    assert library_for_metadata(mi300x, "stream-k", "ROCm 6.2") == ""
    assert LIBRARIES["cutlass-streamk-sm90"].multicast
    assert h100.with_overrides(gemm_library="cutlass-streamk-sm90").library().schedule == (
        "stream-k"
    )


def test_calibration_scores_stream_k_and_chooses_it_only_where_the_data_does() -> None:
    assert "cutlass-streamk-sm80" in schedule_candidates(A100)
    frame = load_measured("gemm")[::12]
    real = calibrate(frame, A100)
    assert "cutlass-streamk-sm80" in real.choice["loss"]
    assert real.choice["chosen"] == "cublas-ampere"  # the A100 tables time waves kernels
    generated = predict_kernels(frame, STREAM_K)
    cal = calibrate(frame.with_columns(latency_us=pl.Series(generated)), A100)
    assert cal.choice["chosen"] == "cutlass-streamk-sm80"
    assert cal.choice["loss"]["cutlass-streamk-sm80"] < cal.choice["loss"]["cublas-ampere"]


def test_a_packet_naming_stream_k_costs_hopper_with_cutlass_stream_k(tmp_path: Path) -> None:
    text = example_path("mapping-dynamic-shapes").read_text()
    old = "compiler: xla 2026.10.2 (openxla@5f1c2e)"
    assert old in text
    path = tmp_path / "packet.yaml"
    path.write_text(text.replace(old, "compiler: CUTLASS 3.5 stream-K"))
    default = build_scenario(load_packet(example_path("mapping-dynamic-shapes")))
    stream_k = build_scenario(load_packet(path))
    assert stream_k.hardware.name == "h100-sxm"
    assert stream_k.hardware.library().name == "cutlass-streamk-sm90"
    # the same plan and shapes costed with another schedule: some GEMM times differ
    assert (stream_k.service_table.compute_bound_ms != default.service_table.compute_bound_ms).any()
