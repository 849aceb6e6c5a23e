"""Calibration: refit the envelope's efficiency parameters to measured kernels, cross-validated.

Which parameters: the four that were set from measurements (`CALIBRATED_FIELDS`, README
"Parameters"): `compute_efficiency`, `memory_efficiency`, `fill_latency_us` and
`min_kernel_us`. Spec-sheet figures (peaks, bandwidths, SRAM) are never refitted.

Loss: Huber on r = log(measured / predicted) with delta = log(1.1) (quadratic within +-10%,
linear beyond), averaged over rows. Log error treats a 2x overprediction and a 2x
underprediction alike; Huber keeps a few badly modelled kernels (e.g. decode attention) from
dragging the fit.

Split (deterministic, no shape in both halves): rows are grouped by their shape key (op, dtype,
every shape column, source); distinct keys are sorted and ranked 1, 2, 3, ...; rows of
even-ranked keys train, rows of odd-ranked keys are held out. Repeated measurements of one shape
therefore never leak across the halves. Rows faster than the envelope's physical minimum
(`fastest_possible_us`, which depends only on peaks, not on the fitted fields) are excluded
first and counted.

Search: `min_kernel_us` enters every prediction additively (a row's prediction is its kernels'
floors plus their phases), so it is profiled out: for each trial of the other three parameters
the best floor is found on a grid over the predictions already computed. The other three are
searched with bounded Nelder-Mead (`minimize.py`), first on an evenly strided subsample of at
most `SEARCH_ROWS` training rows, then polished on every training row. The parameters written
are the ones fitted on the training half (rounded to 4 decimals), and the held-out error
reported is theirs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from model.compiler.accuracy import as_plain_text, fastest_possible_us, predict_kernels
from model.compiler.hardware import FIELD_DOCS, HardwareEnvelope
from model.compiler.minimize import nelder_mead

CALIBRATED_FIELDS = ("compute_efficiency", "memory_efficiency", "fill_latency_us", "min_kernel_us")
"""Envelope fields the calibration fits (the only ones set from measurements)."""

SEARCHED_FIELDS = CALIBRATED_FIELDS[:3]
"""Fields searched by Nelder-Mead; `min_kernel_us` is profiled out (it is additive)."""

SEARCH_STEPS = np.array([0.1, 0.1, 1.0])
"""Initial simplex steps of the searched fields (ratio, ratio, us)."""

POLISH_STEPS = np.array([0.02, 0.02, 0.25])
"""Simplex steps of the polish on every training row (ratio, ratio, us)."""

HUBER_DELTA = math.log(1.1)
"""Huber threshold on |log(measured / predicted)|: quadratic within +-10%, linear beyond."""

SEARCH_ROWS = 1024
"""Largest training subsample the coarse search runs on (evenly strided, deterministic)."""

SEARCH_EVALUATIONS = 60
POLISH_EVALUATIONS = 12
"""Loss evaluations allowed for the coarse search and for the polish."""

MIN_ROWS = 20
"""Fewest plausible rows a calibration accepts (10 per half)."""

FLOOR_QUANTILE = 0.05
"""The floor search stops at this quantile of measured time per kernel: a device floor longer
than the fastest 5% of measured kernels would overpredict all of them."""

SPLIT_RULE = (
    "distinct shape keys (op, dtype, shape columns, source) sorted and ranked; rows of "
    "even-ranked keys train, rows of odd-ranked keys are held out"
)
"""The held-out split, in words (it goes into reports)."""

_KEY_COLUMNS = ("op", "dtype", "m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads",
                "head_dim", "kind", "rows", "cols", "tp", "layer_op", "source")  # fmt: skip
DECIMALS = 4
"""Fitted values are rounded to this many decimals before they are scored and written."""


@dataclass(frozen=True)
class Calibration:
    """A calibration's result: the fitted envelope and its errors before and after.

    Attributes:
        envelope: the input envelope with the fitted `CALIBRATED_FIELDS` (source unchanged:
            the caller says what it was fitted on with `with_overrides(source=...)`).
        original: field -> value before fitting.
        fitted: field -> fitted value.
        rows_train, rows_heldout: plausible rows in each half.
        implausible_rows: rows excluded as faster than the physical minimum.
        train_mdape, heldout_mdape: median absolute percentage error of the fitted envelope on
            each half (fractions: 0.07 = 7%).
        original_train_mdape, original_heldout_mdape: the same for the input envelope.
        by_op: op -> {rows_heldout, heldout_mdape, original_heldout_mdape}.
        evaluations: loss evaluations the search used.
    """

    envelope: HardwareEnvelope
    original: dict[str, float]
    fitted: dict[str, float]
    rows_train: int
    rows_heldout: int
    implausible_rows: int
    train_mdape: float
    heldout_mdape: float
    original_train_mdape: float
    original_heldout_mdape: float
    by_op: dict[str, dict] = field(default_factory=dict)
    evaluations: int = 0

    def as_dict(self) -> dict:
        """Plain JSON-ready form (`telemetry calibrate --json`)."""
        return {
            "hardware": self.envelope.name,
            "fields": list(CALIBRATED_FIELDS),
            "original": dict(self.original),
            "fitted": dict(self.fitted),
            "rows_train": self.rows_train,
            "rows_heldout": self.rows_heldout,
            "implausible_rows": self.implausible_rows,
            "train_mdape": self.train_mdape,
            "heldout_mdape": self.heldout_mdape,
            "original_train_mdape": self.original_train_mdape,
            "original_heldout_mdape": self.original_heldout_mdape,
            "by_op": {op: dict(v) for op, v in self.by_op.items()},
            "loss": f"Huber on log(measured/predicted), delta = log(1.1) = {HUBER_DELTA:.4f}",
            "split": SPLIT_RULE,
            "evaluations": self.evaluations,
        }


def holdout_split(frame: pl.DataFrame) -> np.ndarray:
    """(rows,) bool, True for training rows: even-ranked distinct shape keys (`SPLIT_RULE`)."""
    frame = as_plain_text(frame)
    columns = [c for c in _KEY_COLUMNS if c in frame.columns]
    rank = frame.select(pl.struct(columns).rank("dense")).to_series().to_numpy()
    return rank % 2 == 0


def huber_log_loss(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """Mean Huber loss of log(measured / predicted) over axis 0 (rows), delta `HUBER_DELTA`."""
    r = np.abs(np.log(measured / np.maximum(predicted, 1e-12)))
    return np.mean(
        np.where(r <= HUBER_DELTA, 0.5 * r * r, HUBER_DELTA * (r - 0.5 * HUBER_DELTA)), 0
    )


def mdape(measured: np.ndarray, predicted: np.ndarray) -> float | None:
    """Median absolute percentage error as a fraction (None for no rows)."""
    if len(measured) == 0:
        return None
    return float(np.median(np.abs(predicted - measured) / measured))


def best_floor(
    phases_us: np.ndarray, kernels: np.ndarray, measured: np.ndarray, high: float
) -> tuple[float, float]:
    """(loss, floor us) of the best device floor in [0, high] for predictions
    phases_us + kernels * floor: a 32-point grid, then 16 points between its neighbours."""
    grid = np.linspace(0.0, high, 32)
    for _ in range(2):  # coarse grid, then a finer one around its best point
        losses = huber_log_loss(
            measured[:, None], phases_us[:, None] + kernels[:, None] * grid[None, :]
        )
        best = int(np.argmin(losses))
        low_end, high_end = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        result = (float(losses[best]), float(grid[best]))
        grid = np.linspace(low_end, high_end, 16)
    return result


def _with(hw: HardwareEnvelope, x: np.ndarray, floor: float) -> HardwareEnvelope:
    values = dict(zip(SEARCHED_FIELDS, (float(v) for v in x), strict=True))
    return hw.with_overrides(**values, min_kernel_us=float(floor))


def calibrate(frame: pl.DataFrame, hw: HardwareEnvelope) -> Calibration:
    """Fit `CALIBRATED_FIELDS` of `hw` to the measured kernels in `frame` (kernel-telemetry
    schema, latency_us in us) on one half and score it on the other (module docstring).

    Raises a one-line ValueError when fewer than `MIN_ROWS` plausible rows remain or a row is
    unusable (the predictor names the row and field).
    """
    frame = as_plain_text(frame)
    measured_all = frame["latency_us"].cast(pl.Float64).to_numpy()
    bad = ~np.isfinite(measured_all) | (measured_all <= 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"telemetry row {row}: latency_us must be > 0, got {measured_all[row]!r}")
    plausible = measured_all >= fastest_possible_us(frame, hw)
    rows = frame.filter(pl.Series(plausible))
    if rows.height < MIN_ROWS:
        raise ValueError(
            f"calibration needs at least {MIN_ROWS} plausible rows, got {rows.height} "
            f"({int((~plausible).sum())} implausible)"
        )
    train_mask = holdout_split(rows)
    train, held = rows.filter(pl.Series(train_mask)), rows.filter(pl.Series(~train_mask))
    if min(train.height, held.height) < MIN_ROWS // 2:
        raise ValueError(
            f"calibration needs at least {MIN_ROWS // 2} rows in each half, got {train.height} "
            f"to train and {held.height} held out: measure more distinct shapes"
        )
    measured, measured_held = train["latency_us"].to_numpy(), held["latency_us"].to_numpy()

    start = np.array([getattr(hw, f) for f in SEARCHED_FIELDS], dtype=np.float64)
    low = np.array([FIELD_DOCS[f][2] for f in SEARCHED_FIELDS], dtype=np.float64)
    high = np.array([FIELD_DOCS[f][3] for f in SEARCHED_FIELDS], dtype=np.float64)
    no_floor = hw.with_overrides(min_kernel_us=0.0)
    # Kernels per row: how much one microsecond of floor adds to each prediction (exact: the
    # floor is additive), so the floor can be profiled out of every trial.
    kernels = predict_kernels(train, no_floor.with_overrides(min_kernel_us=1.0)) - predict_kernels(
        train, no_floor
    )
    per_kernel = measured[kernels > 0] / kernels[kernels > 0]
    floor_high = float(np.quantile(per_kernel, FLOOR_QUANTILE)) if len(per_kernel) else 0.0
    floor_high = min(max(floor_high, hw.min_kernel_us), FIELD_DOCS["min_kernel_us"][3])

    def trial_loss(subset: pl.DataFrame, sel: slice):
        def loss(x: np.ndarray) -> float:
            phases = predict_kernels(subset, _with(no_floor, x, 0.0))
            return best_floor(phases, kernels[sel], measured[sel], floor_high)[0]

        return loss

    stride = max(1, math.ceil(train.height / SEARCH_ROWS))
    coarse = nelder_mead(
        trial_loss(train[::stride], slice(None, None, stride)),
        start, SEARCH_STEPS, low, high, max_evaluations=SEARCH_EVALUATIONS,
    )  # fmt: skip
    best, evaluations = coarse.x, coarse.evaluations
    if stride > 1:
        polish = nelder_mead(
            trial_loss(train, slice(None)),
            best, POLISH_STEPS, low, high, max_evaluations=POLISH_EVALUATIONS,
        )  # fmt: skip
        best, evaluations = polish.x, evaluations + polish.evaluations
    phases = predict_kernels(train, _with(no_floor, best, 0.0))
    floor = best_floor(phases, kernels, measured, floor_high)[1]
    fitted = {
        name: round(float(v), DECIMALS)
        for name, v in zip(CALIBRATED_FIELDS, (*best, floor), strict=True)
    }
    envelope = hw.with_overrides(**fitted)

    predicted = {
        (which, half): predict_kernels(data, env)
        for which, env in (("fitted", envelope), ("original", hw))
        for half, data in (("train", train), ("held", held))
    }
    by_op = {}
    ops = held["op"].to_numpy()
    for op in sorted(set(ops.tolist())):
        sel = ops == op
        by_op[op] = {
            "rows_heldout": int(sel.sum()),
            "heldout_mdape": mdape(measured_held[sel], predicted["fitted", "held"][sel]),
            "original_heldout_mdape": mdape(measured_held[sel], predicted["original", "held"][sel]),
        }
    return Calibration(
        envelope=envelope,
        original={name: float(getattr(hw, name)) for name in CALIBRATED_FIELDS},
        fitted=fitted,
        rows_train=train.height,
        rows_heldout=held.height,
        implausible_rows=int((~plausible).sum()),
        train_mdape=mdape(measured, predicted["fitted", "train"]),
        heldout_mdape=mdape(measured_held, predicted["fitted", "held"]),
        original_train_mdape=mdape(measured, predicted["original", "train"]),
        original_heldout_mdape=mdape(measured_held, predicted["original", "held"]),
        by_op=by_op,
        evaluations=evaluations + 2,
    )
