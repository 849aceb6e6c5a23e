"""Hardware envelopes: presets, citations, overrides and one-line errors."""

from __future__ import annotations

from dataclasses import fields

import pytest

from model.compiler.hardware import (
    FIELD_DOCS,
    FILL_LATENCY_CYCLES,
    PRESET_NAMES,
    PRESET_SOURCES,
    HardwareEnvelope,
    preset,
)


def test_every_preset_loads_and_every_preset_has_sources() -> None:
    assert set(PRESET_NAMES) == {
        "a100-sxm", "h100-sxm", "h200-sxm", "b200", "mi300x", "tpu-v4", "npu-8c",
    }  # fmt: skip
    for name in PRESET_NAMES:
        hw = preset(name)
        assert hw.name == name
        assert PRESET_SOURCES[name], name
        assert hw.total_units == hw.cores * hw.units_per_core


def test_gpu_presets_cite_the_spec_sheet_figures_they_use() -> None:
    a100, h100 = preset("a100-sxm"), preset("h100-sxm")
    assert (a100.units_per_core, a100.peak_tflops["bf16"], a100.hbm_gbs) == (108, 312.0, 2039.0)
    assert (h100.units_per_core, h100.peak_tflops["bf16"], h100.hbm_gbs) == (132, 989.4, 3350.0)
    assert "2,039" in PRESET_SOURCES["a100-sxm"]["hbm_gbs"]
    assert preset("h200-sxm").hbm_gbs == 4800.0
    assert a100.cores == h100.cores == 1  # GPUs are one placement target by default


def test_field_docs_cover_every_numeric_field() -> None:
    labels = {"name", "source", "architecture", "gemm_library", "allow_tf32"}
    numeric = {f.name for f in fields(HardwareEnvelope)} - labels
    assert numeric == set(FIELD_DOCS)


def test_overriding_cores_repartitions_the_same_silicon() -> None:
    h100 = preset("h100-sxm")
    two = h100.with_overrides(cores=2)
    assert (two.cores, two.units_per_core, two.total_units) == (2, 66, 132)
    # a core alone pulls at most its units' cache ports: a small slice cannot saturate HBM
    sliced = h100.with_overrides(cores=33)
    assert sliced.core_hbm_bps() == pytest.approx(4 * h100.unit_feed_bps())
    assert sliced.core_hbm_bps() < h100.core_hbm_bps() == pytest.approx(3350e9 * 0.8)
    explicit = h100.with_overrides(cores=2, units_per_core=10)
    assert explicit.total_units == 20


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"hbm_gbs": -5.0}, "hardware.hbm_gbs must be within"),
        ({"clock_scale": 3.0}, "hardware.clock_scale must be within"),
        ({"peak_tflops": {"bf17": 1.0}}, "unknown dtype 'bf17'"),
        ({"cores": 1000}, "exceeds the 108 compute units"),
        ({"warp_speed": 9}, "unknown field(s) warp_speed"),
        ({"units_per_core": 2.5}, "hardware.units_per_core must be a whole number"),
    ],
)
def test_bad_fields_raise_one_line_errors(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        preset("a100-sxm").with_overrides(**overrides)
    assert "\n" not in str(err.value)


def test_unknown_preset_and_missing_dtype_name_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="unknown preset 'b300'"):
        preset("b300")
    with pytest.raises(ValueError, match=r"a100-sxm.*unknown dtype 'fp4'"):
        preset("a100-sxm").unit_flops("fp4")


def test_clock_scale_scales_compute_and_cache_not_hbm() -> None:
    hw = preset("a100-sxm")
    slow = hw.with_overrides(clock_scale=0.5)
    assert slow.unit_flops("bf16") == pytest.approx(hw.unit_flops("bf16") / 2)
    assert slow.unit_feed_bps() == pytest.approx(hw.unit_feed_bps() / 2)
    assert slow.hbm_gbs == hw.hbm_gbs
    # the fill is a cycle count: half the clock, twice the wait; the device floor is absolute
    assert slow.fill_s() == pytest.approx(2 * hw.fill_s())
    assert slow.min_kernel_us == hw.min_kernel_us


def test_a_users_envelope_derives_what_it_leaves_out() -> None:
    hw = HardwareEnvelope.from_fields(
        name="my-npu", cores=4, units_per_core=2, peak_tflops={"bf16": 64.0},
        hbm_gbs=800.0, sram_kib_per_unit=512.0,
    )  # fmt: skip
    assert hw.vector_tflops == 4.0 and hw.cache_gbs == 2800.0 and hw.shared_cache_mib == 0.0
    with pytest.raises(ValueError, match="missing field\\(s\\) hbm_gbs"):
        HardwareEnvelope.from_fields(
            cores=1, units_per_core=1, peak_tflops={"bf16": 1.0}, sram_kib_per_unit=1.0
        )
    with pytest.raises(ValueError, match="unknown field\\(s\\) colour"):
        HardwareEnvelope.from_fields(
            cores=1, units_per_core=1, peak_tflops={"bf16": 1.0}, hbm_gbs=1.0,
            sram_kib_per_unit=1.0, colour="red",
        )  # fmt: skip


def test_clocks_derive_from_peaks_and_fills_are_the_same_cycle_count() -> None:
    clocks = {n: preset(n).clock_ghz for n in ("a100-sxm", "h100-sxm", "b200", "mi300x")}
    assert clocks == pytest.approx(
        {"a100-sxm": 1.4106, "h100-sxm": 1.830, "b200": 1.856, "mi300x": 2.100}, abs=1e-3
    )
    a100 = preset("a100-sxm")
    assert a100.fill_latency_us == 2.0  # the fitted reference, unchanged
    for name in ("h100-sxm", "h200-sxm", "b200", "mi300x"):
        hw = preset(name)
        assert hw.fill_latency_cycles == pytest.approx(FILL_LATENCY_CYCLES)
        assert hw.fill_latency_us < a100.fill_latency_us  # higher clock, shorter wait


def test_missing_matrix_dtypes_run_as_the_matrix_dtype_with_a_note() -> None:
    tpu = preset("tpu-v4")
    assert "fp16" not in tpu.peak_tflops
    used, note = tpu.matrix_dtype("fp16")
    assert used == "bf16" and "fp16 matmuls run as bf16" in note
    assert tpu.unit_flops("fp16") == tpu.unit_flops("bf16")
    a100 = preset("a100-sxm")
    assert a100.matrix_dtype("fp8")[0] == "bf16" and a100.matrix_dtype("bf16") == ("bf16", None)
    # fp32 matmuls use TF32 tensor cores only where allowed
    assert a100.unit_flops("fp32") == pytest.approx(19.5e12 * 0.9 / 108)
    tf32 = a100.with_overrides(allow_tf32=True)
    assert tf32.matrix_dtype("fp32")[0] == "tf32"
    assert tf32.unit_flops("fp32") == pytest.approx(156e12 * 0.9 / 108)
    assert preset("tpu-v4").with_overrides(allow_tf32=True).matrix_dtype("fp32")[0] == "fp32"


def test_new_presets_cite_every_spec_figure() -> None:
    spec = (
        "units_per_core", "peak_tflops", "tf32_tflops", "vector_tflops", "hbm_gbs", "cache_gbs",
        "sram_kib_per_unit", "shared_cache_mib", "launch_overhead_us", "min_kernel_us",
        "tile_granule", "matrix_flops_per_clock", "sustained_clock_ratio", "cluster_size",
        "architecture", "fitted",
    )  # fmt: skip
    for name in ("a100-sxm", "h100-sxm", "b200", "mi300x", "tpu-v4"):
        missing = [f for f in spec if f not in PRESET_SOURCES[name]]
        assert not missing, (name, missing)
    b200, mi300x = preset("b200"), preset("mi300x")
    assert (b200.units_per_core, b200.peak_tflops["bf16"], b200.hbm_gbs) == (148, 2250.0, 8000.0)
    assert (mi300x.units_per_core, mi300x.peak_tflops["bf16"], mi300x.hbm_gbs) == (
        304, 1307.4, 5300.0,
    )  # fmt: skip
    assert (b200.cluster_size, mi300x.cluster_size, preset("a100-sxm").cluster_size) == (2, 1, 1)


def test_bad_labels_raise_one_line_errors() -> None:
    with pytest.raises(ValueError, match=r"hardware\.architecture: unknown 'vax'"):
        preset("a100-sxm").with_overrides(architecture="vax")
    with pytest.raises(ValueError, match=r"hardware\.gemm_library: unknown 'mkl'"):
        preset("a100-sxm").with_overrides(gemm_library="mkl")
    with pytest.raises(ValueError, match=r"hardware\.cluster_size must be a whole number"):
        preset("h100-sxm").with_overrides(cluster_size=1.5)


def test_the_cache_feed_efficiency_is_a_parameter_apart_from_hbm_s() -> None:
    a100 = preset("a100-sxm")
    assert a100.cache_efficiency is None and a100.feed_efficiency == a100.memory_efficiency
    apart = a100.with_overrides(cache_efficiency=0.6)
    assert apart.unit_feed_bps() == pytest.approx(a100.unit_feed_bps() * 0.6 / 0.8)
    assert apart.core_hbm_bps() == a100.core_hbm_bps()  # HBM is still 0.8 x 2,039 GB/s
    with pytest.raises(ValueError, match=r"hardware\.cache_efficiency must be within"):
        a100.with_overrides(cache_efficiency=1.5)
