"""Hardware envelopes: presets, citations, overrides and one-line errors."""

from __future__ import annotations

from dataclasses import fields

import pytest

from model.compiler.hardware import (
    FIELD_DOCS,
    PRESET_NAMES,
    PRESET_SOURCES,
    HardwareEnvelope,
    preset,
)


def test_every_preset_loads_and_every_preset_has_sources() -> None:
    assert set(PRESET_NAMES) == {"a100-sxm", "h100-sxm", "h200-sxm", "tpu-v4", "npu-8c"}
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
    numeric = {f.name for f in fields(HardwareEnvelope)} - {"name", "source"}
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
    with pytest.raises(ValueError, match="unknown preset 'b200'"):
        preset("b200")
    with pytest.raises(ValueError, match=r"a100-sxm.*no peak_tflops for dtype 'fp8'"):
        preset("a100-sxm").unit_flops("fp8")


def test_clock_scale_scales_compute_and_cache_not_hbm() -> None:
    hw = preset("a100-sxm")
    slow = hw.with_overrides(clock_scale=0.5)
    assert slow.unit_flops("bf16") == pytest.approx(hw.unit_flops("bf16") / 2)
    assert slow.unit_feed_bps() == pytest.approx(hw.unit_feed_bps() / 2)
    assert slow.hbm_gbs == hw.hbm_gbs


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
