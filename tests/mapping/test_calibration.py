"""Calibration: cross-validated refit of the efficiency parameters (shared A100 data: a missing
file fails, never skips)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.compiler.accuracy import predict_kernels
from model.compiler.calibration import (
    CALIBRATED_FIELDS,
    MIN_ROWS,
    calibrate,
    holdout_split,
    huber_log_loss,
)
from model.compiler.hardware import FIELD_DOCS, preset
from model.compiler.measured import load_measured
from model.compiler.minimize import nelder_mead

A100 = preset("a100-sxm")


@pytest.fixture(scope="module")
def gemm_calibration():
    return calibrate(load_measured("gemm"), A100)


def test_heldout_mdape_on_the_a100_gemm_data_meets_the_target(gemm_calibration) -> None:
    cal = gemm_calibration
    assert cal.rows_train + cal.rows_heldout == 9240 and cal.implausible_rows == 0
    assert cal.heldout_mdape <= 0.08
    assert cal.heldout_mdape < cal.original_heldout_mdape  # the fit helps on unseen shapes
    assert abs(cal.train_mdape - cal.heldout_mdape) < 0.01  # no overfitting with 4 parameters
    for name in CALIBRATED_FIELDS:
        _, _, low, high = FIELD_DOCS[name]
        assert low <= cal.fitted[name] <= high
        assert getattr(cal.envelope, name) == cal.fitted[name]
    # Spec-sheet figures are never refitted.
    assert cal.envelope.hbm_gbs == A100.hbm_gbs and cal.envelope.peak_tflops == A100.peak_tflops


def test_the_reported_heldout_error_is_the_written_envelope_s(gemm_calibration) -> None:
    frame = load_measured("gemm")
    held = frame.filter(pl.Series(~holdout_split(frame)))
    measured = held["latency_us"].to_numpy()
    predicted = predict_kernels(held, gemm_calibration.envelope)
    assert np.median(np.abs(predicted - measured) / measured) == pytest.approx(
        gemm_calibration.heldout_mdape, rel=1e-12
    )


def test_calibration_recovers_known_parameters_from_model_generated_data() -> None:
    truth = {"compute_efficiency": 0.72, "memory_efficiency": 0.63,
             "fill_latency_us": 3.1, "min_kernel_us": 2.6}  # fmt: skip
    frame = load_measured("gemm")[::4]
    rng = np.random.default_rng(2024)
    noise = rng.lognormal(0.0, 0.05, frame.height)
    measured = predict_kernels(frame, A100.with_overrides(**truth)) * noise
    cal = calibrate(frame.with_columns(latency_us=pl.Series(measured)), A100)
    assert cal.fitted["compute_efficiency"] == pytest.approx(0.72, abs=0.02)
    assert cal.fitted["memory_efficiency"] == pytest.approx(0.63, abs=0.02)
    assert cal.fitted["fill_latency_us"] == pytest.approx(3.1, abs=0.3)
    assert cal.fitted["min_kernel_us"] == pytest.approx(2.6, abs=0.2)
    assert cal.heldout_mdape < 0.06 < cal.original_heldout_mdape


def test_calibration_is_deterministic() -> None:
    frame = load_measured("layer_ops")[::5]
    first, again = calibrate(frame, A100), calibrate(frame, A100)
    assert first.as_dict() == again.as_dict()


def test_the_floor_is_additive_so_it_can_be_profiled_out() -> None:
    """The search relies on it: one us of device floor adds one us per kernel of the row."""
    frame = pl.concat(
        [load_measured(name)[::97] for name in ("gemm", "attention", "layer_ops")],
        how="diagonal_relaxed",
    )
    zero = predict_kernels(frame, A100.with_overrides(min_kernel_us=0.0))
    three = predict_kernels(frame, A100.with_overrides(min_kernel_us=3.0))
    kernels = np.where(frame["op"].str.starts_with("attention").to_numpy(), 2.0, 1.0)
    np.testing.assert_allclose(three - zero, 3.0 * kernels, rtol=0, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 40), min_size=2, max_size=60), st.integers(1, 5))
def test_split_keeps_every_shape_on_one_side(ms: list[int], repeats: int) -> None:
    frame = pl.DataFrame({"op": "gemm", "dtype": "bf16", "m": ms, "n": 64, "k": 64,
                          "latency_us": 5.0})  # fmt: skip
    frame = pl.concat([frame] * repeats)
    train = holdout_split(frame)
    side = (
        pl.DataFrame({"m": frame["m"], "train": train})
        .group_by("m")
        .agg(pl.col("train").n_unique())
    )
    assert (side["train"] == 1).all()
    distinct = len(set(ms))
    # Distinct shapes alternate: the halves differ by at most one distinct shape.
    train_shapes = len(set(frame["m"].to_numpy()[train].tolist()))
    assert abs(2 * train_shapes - distinct) <= 1


def test_too_few_rows_is_a_one_line_error() -> None:
    frame = load_measured("gemm")[: MIN_ROWS - 1]
    with pytest.raises(ValueError, match=r"at least 20 plausible rows") as err:
        calibrate(frame, A100)
    assert "\n" not in str(err.value)


def test_huber_loss_is_quadratic_inside_and_linear_outside() -> None:
    measured = np.array([1.0, 1.0])
    small = huber_log_loss(measured, np.exp(-np.array([0.05, 0.05])))
    assert small == pytest.approx(0.5 * 0.05**2)
    big1 = huber_log_loss(measured, np.exp(-np.array([1.0, 1.0])))
    big2 = huber_log_loss(measured, np.exp(-np.array([2.0, 2.0])))
    assert big2 - big1 == pytest.approx(np.log(1.1))  # slope delta beyond the threshold


def test_nelder_mead_finds_a_bounded_minimum() -> None:
    target = np.array([0.3, 2.0])
    found = nelder_mead(
        lambda x: float(np.sum((x - target) ** 2)), np.array([0.9, 5.0]), np.array([0.1, 1.0]),
        np.array([0.0, 0.0]), np.array([1.0, 10.0]), max_evaluations=200, tolerance=1e-6,
    )  # fmt: skip
    np.testing.assert_allclose(found.x, target, atol=1e-3)
    at_edge = nelder_mead(
        lambda x: float(np.sum((x - np.array([2.0, -1.0])) ** 2)), np.array([0.5, 0.5]),
        np.array([0.1, 0.1]), np.array([0.0, 0.0]), np.array([1.0, 1.0]), max_evaluations=200,
    )  # fmt: skip
    np.testing.assert_allclose(at_edge.x, [1.0, 0.0], atol=1e-3)
    assert at_edge.evaluations <= 200
