"""Calibration: refit the envelope's mechanism parameters to measured kernels, each within
physical bounds, cross-validated by shape and by regime, with error bands from the residuals.

Which parameters: `BOUNDS`, a table of (field, lower, upper, step, why) the fit iterates over;
a field the envelope lacks is skipped, so a new mechanism parameter is a one-line addition. The
GEMM library's schedule (waves or persistent, epilogue overlap) is a categorical choice made
on the training loss (`choose_schedule`). Spec-sheet figures (peaks, bandwidths, SRAM) are never refitted. The device floor
`min_kernel_us` is fitted too, with bounds from the data (`floor_bounds`): no longer than the
fastest measured kernel (a longer floor overpredicts it), and no shorter than that kernel's
measured time less its modelled phases and `FLOOR_TOLERANCE` (a shorter floor predicts the
fastest kernel too fast). A fitted value within `SUSPECT_MARGIN` of a bound is reported as
suspect: the data pushes the parameter past what the mechanism allows, so another mechanism is
missing.

Loss: Huber on r = log(measured / predicted) with delta = log(1.1) (quadratic within +-10%,
linear beyond), averaged over rows. Log error treats a 2x overprediction and a 2x
underprediction alike; Huber keeps a few badly modelled kernels from dragging the fit.

Split (deterministic, no shape in both halves): rows are grouped by their shape key (op, dtype,
every shape column, source); distinct keys are sorted and ranked 1, 2, 3, ...; rows of
even-ranked keys train, rows of odd-ranked keys are held out. Rows faster than the envelope's
physical minimum (`fastest_possible_us`) are excluded first and counted. Leave-one-regime-out
(`leave_one_regime_out`) fits on one side of a `regimes.REGIME_SPLITS` split and scores the
other; `transfer` fits on one table and scores another (cross-source).

Search: the floor enters every prediction additively (a row's prediction is its kernels' floors
plus their phases), so it is profiled out: for each trial of the other parameters the best floor
within its bounds is found on a grid over the predictions already computed. The others are
searched with bounded Nelder-Mead (`minimize.py`), first on an evenly strided subsample of at
most `SEARCH_ROWS` training rows (plus the fastest row, which sets the floor's bounds), then
polished on every training row; a weak prior toward the input envelope (`PRIOR_WEIGHT`) holds
parameters the data cannot separate. Fitted values are rounded to `DECIMALS`.

Bands: the fitted envelope's residuals on the training rows give 10-90% bands of measured /
predicted per op and predicted-time class (`regimes.bands_from_residuals`); the held-out rows'
coverage of their bands is reported (about 80% when the bands transfer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from model.compiler.accuracy import as_plain_text, fastest_possible_us, predict_kernels
from model.compiler.hardware import FIELD_DOCS, HardwareEnvelope
from model.compiler.minimize import nelder_mead
from model.compiler.regimes import REGIME_SPLITS, ErrorBands, RegimeSplit, bands_from_residuals


@dataclass(frozen=True)
class Bound:
    """A refitted envelope field and its physical range.

    Attributes:
        field: the `HardwareEnvelope` field.
        lower, upper: physical bounds, in the field's unit (FIELD_DOCS).
        step: initial simplex step of the search, same unit.
        why: where the bounds come from (reports print it beside a suspect fit).
        effective: the envelope attribute holding the field's value in use when the field
            itself is unset (None: the field is always set).
    """

    field: str
    lower: float
    upper: float
    step: float
    why: str
    effective: str | None = None

    def current(self, hw: HardwareEnvelope) -> float:
        """The value `hw` uses for this field now."""
        value = getattr(hw, self.field)
        if value is None and self.effective is not None:
            value = getattr(hw, self.effective)
        return float(value)


BOUNDS: tuple[Bound, ...] = (
    Bound("compute_efficiency", 0.6, 0.95, 0.1,
          "tensor-core main loops of tuned GEMM libraries sustain 70-90% of dense peak on "
          "A100/H100 (cuBLAS bf16 ~280 of 312 TFLOP/s); none sustains above 95% (issue and "
          "clock limits); below 60% is a mis-tuned kernel, not the device"),
    Bound("memory_efficiency", 0.6, 0.95, 0.1,
          "streaming copies reach 85-93% of HBM peak on A100/H100 (STREAM/BabelStream-class "
          "benchmarks); DRAM refresh and read/write turnaround keep any stream below 95%"),
    Bound("cache_efficiency", 0.5, 0.95, 0.1,
          "tiles' operand feed from the shared cache: L2 read microbenchmarks on A100 reach "
          "~70-90% of its 5,120 B/clk peak; bank and crossbar conflicts keep any feed below 95%",
          effective="feed_efficiency"),
    Bound("fill_latency_us", 0.5, 6.0, 1.0,
          "a wave's first operands wait at least one DRAM round trip (~0.5-0.6 us on A100 and "
          "H100, pointer-chase microbenchmarks) and at most ~10 with prologue, barrier and "
          "epilogue synchronisation"),
)  # fmt: skip
"""The refitted fields, their physical bounds and why (skipped where the envelope lacks one)."""

FLOOR_FIELD = "min_kernel_us"
"""The device floor: profiled out of the search, bounded by the data (`floor_bounds`)."""

FLOOR_TOLERANCE = 0.1
"""How much faster than measured the fit may predict the fastest kernel (10%, the Huber
threshold): it sets the floor's lower bound."""

PRIOR_WEIGHT = 1e-3
"""Weight of a weak quadratic prior toward the input envelope's values, per squared bound
span, added to the loss: where the data cannot tell parameters apart (small-m GEMMs never
reach compute peak, so compute and cache-feed efficiency trade off freely) the fit keeps the
input's values instead of drifting along the flat direction. 1e-3 is a tenth of the Huber
loss of a 15% error: negligible wherever the data decides."""

SUSPECT_MARGIN = 0.02
"""A fitted value within this fraction of its bound span from a bound is suspect."""

HUBER_DELTA = math.log(1.1)
"""Huber threshold on |log(measured / predicted)|: quadratic within +-10%, linear beyond."""

SEARCH_ROWS = 1024
"""Largest training subsample the coarse search runs on (evenly strided, deterministic)."""

SEARCH_EVALUATIONS = 60
POLISH_EVALUATIONS = 12
"""Loss evaluations allowed for the coarse search and for the polish."""

POLISH_SHRINK = 5.0
"""The polish's simplex steps are the search's divided by this."""

MIN_ROWS = 20
"""Fewest plausible rows a calibration accepts (10 per half)."""

SPLIT_RULE = (
    "distinct shape keys (op, dtype, shape columns, source) sorted and ranked; rows of "
    "even-ranked keys train, rows of odd-ranked keys are held out"
)
"""The held-out split, in words (it goes into reports)."""

_KEY_COLUMNS = ("op", "dtype", "m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads",
                "head_dim", "kind", "rows", "cols", "tp", "layer_op", "source")  # fmt: skip
DECIMALS = 4
"""Fitted values are rounded to this many decimals before they are scored and written."""

RATIO_QUANTILES = (0.10, 0.50, 0.90)
"""Quantiles of the signed ratio measured / predicted that reports give per regime."""


def searched_bounds(hw: HardwareEnvelope) -> tuple[Bound, ...]:
    """The `BOUNDS` rows whose field the envelope has."""
    return tuple(b for b in BOUNDS if hasattr(hw, b.field))


def calibrated_fields(hw: HardwareEnvelope) -> tuple[str, ...]:
    """Every field a calibration of `hw` fits: the searched ones, then the floor."""
    return (*(b.field for b in searched_bounds(hw)), FLOOR_FIELD)


CALIBRATED_FIELDS = (*(b.field for b in BOUNDS), FLOOR_FIELD)
"""The fields the calibration fits on an envelope that has them all."""


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


def ratio_quantiles(measured: np.ndarray, predicted: np.ndarray) -> dict[str, float] | None:
    """p10, p50, p90 of the signed ratio measured / predicted (> 1: slower than predicted)."""
    if len(measured) == 0:
        return None
    q = np.quantile(measured / predicted, RATIO_QUANTILES)
    return {f"p{round(100 * p)}": float(v) for p, v in zip(RATIO_QUANTILES, q, strict=True)}


def best_floor(
    phases_us: np.ndarray,
    kernels: np.ndarray,
    measured: np.ndarray,
    low: float,
    high: float,
    prior: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """(loss, floor us) of the best device floor in [low, high] for predictions
    phases_us + kernels * floor: a 32-point grid, then 16 points between its neighbours.
    prior: (value, span) of the weak prior toward the input floor (`PRIOR_WEIGHT`)."""
    grid = np.linspace(low, high, 32)
    for _ in range(2):  # coarse grid, then a finer one around its best point
        losses = huber_log_loss(
            measured[:, None], phases_us[:, None] + kernels[:, None] * grid[None, :]
        )
        if prior is not None:
            losses = losses + PRIOR_WEIGHT * ((grid - prior[0]) / prior[1]) ** 2
        best = int(np.argmin(losses))
        low_end, high_end = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
        result = (float(losses[best]), float(grid[best]))
        grid = np.linspace(low_end, high_end, 16)
    return result


def floor_bounds(fastest_us: float, fastest_phases_us: float) -> tuple[float, float]:
    """(lower, upper) floor, us, from the fastest measured kernel (time per kernel of its row,
    and its modelled phases per kernel at the trial's parameters): upper its measured time (a
    longer floor overpredicts it), lower its time less FLOOR_TOLERANCE less its phases (a
    shorter floor predicts it too fast)."""
    high = min(fastest_us, FIELD_DOCS[FLOOR_FIELD][3])
    low = max(0.0, (1.0 - FLOOR_TOLERANCE) * fastest_us - fastest_phases_us)
    return min(low, high), high


def _with(hw: HardwareEnvelope, bounds: tuple[Bound, ...], x: np.ndarray, floor: float):
    values = {b.field: float(v) for b, v in zip(bounds, x, strict=True)}
    return hw.with_overrides(**values, **{FLOOR_FIELD: float(floor)})


@dataclass(frozen=True)
class Fit:
    """An envelope fitted to rows, with the bounds it was fitted within.

    Attributes:
        envelope: the input envelope with the fitted fields.
        fitted: field -> fitted value (rounded to DECIMALS).
        bounds: field -> (lower, upper, why); the floor's come from the data.
        suspect: one dict per fitted value on a bound: field, value, bound (lower | upper),
            limit, why.
        evaluations: loss evaluations the search used.
    """

    envelope: HardwareEnvelope
    fitted: dict[str, float]
    bounds: dict[str, tuple[float, float, str]]
    suspect: tuple[dict, ...]
    evaluations: int


def _kernels_per_row(frame: pl.DataFrame, hw: HardwareEnvelope) -> np.ndarray:
    """How much one microsecond of floor adds to each row's prediction (exact: it is additive)."""
    zero = hw.with_overrides(**{FLOOR_FIELD: 0.0})
    one = hw.with_overrides(**{FLOOR_FIELD: 1.0})
    return predict_kernels(frame, one) - predict_kernels(frame, zero)


def _suspects(fitted: dict[str, float], bounds: dict[str, tuple[float, float, str]]):
    out = []
    for name, value in fitted.items():
        low, high, why = bounds[name]
        margin = SUSPECT_MARGIN * max(high - low, 1e-12)
        for side, limit in (("lower", low), ("upper", high)):
            if abs(value - limit) <= margin:
                out.append({"field": name, "value": value, "bound": side, "limit": limit,
                            "why": why})  # fmt: skip
    return tuple(out)


def fit_envelope(rows: pl.DataFrame, hw: HardwareEnvelope) -> Fit:
    """Fit the `BOUNDS` fields and the floor of `hw` to every row of `rows` (plausible rows,
    kernel-telemetry schema, latency_us in us) within their bounds (module docstring)."""
    rows = as_plain_text(rows)
    bounds = searched_bounds(hw)
    measured = rows["latency_us"].cast(pl.Float64).to_numpy()
    kernels = _kernels_per_row(rows, hw)
    per_kernel = np.where(kernels > 0, measured / np.maximum(kernels, 1e-12), np.inf)
    fastest = int(np.argmin(per_kernel))
    no_floor = hw.with_overrides(**{FLOOR_FIELD: 0.0})
    start = np.array([b.current(hw) for b in bounds], dtype=np.float64)
    low = np.array([b.lower for b in bounds])
    high = np.array([b.upper for b in bounds])
    steps = np.array([b.step for b in bounds])
    # The floor's prior span: the widest its data bounds can be (zero to the fastest kernel).
    floor_prior = (float(getattr(hw, FLOOR_FIELD)), max(float(per_kernel[fastest]), 1e-9))

    def trial(index: np.ndarray):
        subset, at = rows[index], int(np.searchsorted(index, fastest))

        def loss(x: np.ndarray) -> float:
            phases = predict_kernels(subset, _with(no_floor, bounds, x, 0.0), checked=True)
            f_low, f_high = floor_bounds(per_kernel[fastest], phases[at] / kernels[fastest])
            fit = best_floor(phases, kernels[index], measured[index], f_low, f_high, floor_prior)[0]
            return fit + PRIOR_WEIGHT * float(np.sum(((x - start) / (high - low)) ** 2))

        return loss

    everything = np.arange(rows.height)
    stride = max(1, math.ceil(rows.height / SEARCH_ROWS))
    coarse_rows = np.union1d(everything[::stride], [fastest])
    result = nelder_mead(trial(coarse_rows), start, steps, low, high,
                         max_evaluations=SEARCH_EVALUATIONS)  # fmt: skip
    best, evaluations = result.x, result.evaluations
    if stride > 1:
        polish = nelder_mead(trial(everything), best, steps / POLISH_SHRINK, low, high,
                             max_evaluations=POLISH_EVALUATIONS)  # fmt: skip
        best, evaluations = polish.x, evaluations + polish.evaluations
    best = np.round(best, DECIMALS)
    phases = predict_kernels(rows, _with(no_floor, bounds, best, 0.0))
    f_low, f_high = floor_bounds(per_kernel[fastest], phases[fastest] / kernels[fastest])
    floor = best_floor(phases, kernels, measured, f_low, f_high, floor_prior)[1]
    fitted = {b.field: float(v) for b, v in zip(bounds, best, strict=True)}
    fitted[FLOOR_FIELD] = round(float(floor), DECIMALS)
    table = {b.field: (b.lower, b.upper, b.why) for b in bounds}
    table[FLOOR_FIELD] = (
        round(f_low, DECIMALS), round(f_high, DECIMALS),
        f"the fastest measured kernel ({per_kernel[fastest]:.3g} us per kernel) bounds it: a "
        f"longer floor overpredicts it, a shorter one predicts it more than "
        f"{FLOOR_TOLERANCE:.0%} fast",
    )  # fmt: skip
    return Fit(
        envelope=hw.with_overrides(**fitted),
        fitted=fitted,
        bounds=table,
        suspect=_suspects(fitted, table),
        evaluations=evaluations + 2,
    )


CHOICE_FIELD = "gemm_library"
"""The categorical mechanism the fit chooses: the GEMM library descriptor (schedule: waves or
persistent, epilogue overlap, multicast; model/compiler/library.py)."""


def schedule_candidates(hw: HardwareEnvelope) -> tuple[str, ...]:
    """Library descriptors that schedule GEMMs differently on `hw`: the envelope's own first,
    then one per other distinct (schedule, epilogue overlap, multicast where the device has
    clusters, fixed cycles). Empty when the envelope has no library field."""
    if not hasattr(hw, CHOICE_FIELD):
        return ()
    from model.compiler.library import LIBRARIES

    def signature(lib) -> tuple:
        multicast = lib.multicast and getattr(hw, "cluster_size", 1) > 1
        return (lib.schedule, lib.epilogue_overlap, multicast, lib.fixed_cycles)

    own = hw.library()
    seen, names = {signature(own)}, [own.name]
    for name, lib in LIBRARIES.items():
        if signature(lib) not in seen:
            seen.add(signature(lib))
            names.append(name)
    return tuple(names)


def choose_schedule(rows: pl.DataFrame, hw: HardwareEnvelope, fit: Fit) -> tuple[Fit, dict]:
    """The schedule choice: the training loss of the fitted envelope with each candidate
    library (`schedule_candidates`) at the fitted parameters; where another library fits better,
    the parameters are refitted with it and kept if the refit's loss is lower still. Returns (the fit kept, {chosen, loss: {library: loss}})."""
    names = schedule_candidates(hw)
    gemm = rows.filter(pl.col("op") == "gemm") if "op" in rows.columns else rows
    if len(names) < 2 or gemm.height == 0:
        return fit, {}
    measured = rows["latency_us"].cast(pl.Float64).to_numpy()
    losses = {}
    for name in names:
        env = fit.envelope.with_overrides(**{CHOICE_FIELD: name})
        losses[name] = round(float(huber_log_loss(measured, predict_kernels(rows, env))), 6)
    chosen = min(names, key=lambda n: (losses[n], names.index(n)))
    if chosen != names[0]:
        refit = fit_envelope(rows, hw.with_overrides(**{CHOICE_FIELD: chosen}))
        measured_loss = float(huber_log_loss(measured, predict_kernels(rows, refit.envelope)))
        if measured_loss < losses[names[0]]:
            fit = refit
        else:
            chosen = names[0]
    return fit, {"field": CHOICE_FIELD, "chosen": chosen, "loss": losses}


@dataclass(frozen=True)
class Calibration:
    """A calibration's result: the fitted envelope and its errors before and after.

    Attributes:
        envelope: the input envelope with the fitted fields (source unchanged: the caller says
            what it was fitted on with `with_overrides(source=...)`).
        original: field -> value before fitting.
        fitted: field -> fitted value.
        rows_train, rows_heldout: plausible rows in each half.
        implausible_rows: rows excluded as faster than the physical minimum.
        train_mdape, heldout_mdape: median absolute percentage error of the fitted envelope on
            each half (fractions: 0.07 = 7%).
        original_train_mdape, original_heldout_mdape: the same for the input envelope.
        by_op: op -> {rows_heldout, heldout_mdape, original_heldout_mdape, heldout_ratio}.
        evaluations: loss evaluations the search used.
        bounds: field -> (lower, upper, why) the fit stayed within.
        suspect: fitted values on a bound (`Fit.suspect`).
        bands: 10-90% bands from the fitted envelope's training residuals.
        band_coverage_heldout: fraction of held-out rows inside their band.
        heldout_ratio: p10/p50/p90 of measured / predicted on the held-out rows.
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
    bounds: dict[str, tuple[float, float, str]] = field(default_factory=dict)
    suspect: tuple[dict, ...] = ()
    bands: ErrorBands | None = None
    band_coverage_heldout: float | None = None
    heldout_ratio: dict[str, float] | None = None
    choice: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """Plain JSON-ready form (`telemetry calibrate --json`)."""
        return {
            "hardware": self.envelope.name,
            "fields": list(self.fitted),
            "original": dict(self.original),
            "fitted": dict(self.fitted),
            "bounds": {
                k: {"lower": v[0], "upper": v[1], "why": v[2]} for k, v in self.bounds.items()
            },
            "suspect": [dict(s) for s in self.suspect],
            "choice": dict(self.choice),
            "rows_train": self.rows_train,
            "rows_heldout": self.rows_heldout,
            "implausible_rows": self.implausible_rows,
            "train_mdape": self.train_mdape,
            "heldout_mdape": self.heldout_mdape,
            "heldout_ratio": self.heldout_ratio,
            "original_train_mdape": self.original_train_mdape,
            "original_heldout_mdape": self.original_heldout_mdape,
            "by_op": {op: dict(v) for op, v in self.by_op.items()},
            "bands": None if self.bands is None else self.bands.as_dict(),
            "band_coverage_heldout": self.band_coverage_heldout,
            "loss": f"Huber on log(measured/predicted), delta = log(1.1) = {HUBER_DELTA:.4f}",
            "split": SPLIT_RULE,
            "evaluations": self.evaluations,
        }


def plausible_rows(frame: pl.DataFrame, hw: HardwareEnvelope) -> tuple[pl.DataFrame, int]:
    """(rows no faster than the envelope's physical minimum, how many were not). A row with a
    latency that is not a positive number raises a one-line ValueError naming it."""
    frame = as_plain_text(frame)
    measured = frame["latency_us"].cast(pl.Float64).to_numpy()
    bad = ~np.isfinite(measured) | (measured <= 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"telemetry row {row}: latency_us must be > 0, got {measured[row]!r}")
    plausible = measured >= fastest_possible_us(frame, hw)
    return frame.filter(pl.Series(plausible)), int((~plausible).sum())


def calibrate(frame: pl.DataFrame, hw: HardwareEnvelope) -> Calibration:
    """Fit the calibrated fields of `hw` to the measured kernels in `frame` (kernel-telemetry
    schema, latency_us in us) on one half and score it on the other (module docstring).

    Raises a one-line ValueError when fewer than `MIN_ROWS` plausible rows remain or a row is
    unusable (the predictor names the row and field).
    """
    rows, implausible = plausible_rows(frame, hw)
    if rows.height < MIN_ROWS:
        raise ValueError(
            f"calibration needs at least {MIN_ROWS} plausible rows, got {rows.height} "
            f"({implausible} implausible)"
        )
    train_mask = holdout_split(rows)
    train, held = rows.filter(pl.Series(train_mask)), rows.filter(pl.Series(~train_mask))
    if min(train.height, held.height) < MIN_ROWS // 2:
        raise ValueError(
            f"calibration needs at least {MIN_ROWS // 2} rows in each half, got {train.height} "
            f"to train and {held.height} held out: measure more distinct shapes"
        )
    fit, choice = choose_schedule(train, hw, fit_envelope(train, hw))
    envelope = fit.envelope
    measured, measured_held = train["latency_us"].to_numpy(), held["latency_us"].to_numpy()
    predicted = {
        (which, half): predict_kernels(data, env)
        for which, env in (("fitted", envelope), ("original", hw))
        for half, data in (("train", train), ("held", held))
    }
    bands = bands_from_residuals(
        train["op"].to_numpy(), predicted["fitted", "train"], measured,
        f"residuals of {hw.name} calibrated on {train.height} training rows",
    )  # fmt: skip
    ops_held = held["op"].to_numpy()
    by_op = {}
    for op in sorted(set(ops_held.tolist())):
        sel = ops_held == op
        fitted_held = predicted["fitted", "held"][sel]
        by_op[op] = {
            "rows_heldout": int(sel.sum()),
            "heldout_mdape": mdape(measured_held[sel], fitted_held),
            "original_heldout_mdape": mdape(measured_held[sel], predicted["original", "held"][sel]),
            "heldout_ratio": ratio_quantiles(measured_held[sel], fitted_held),
        }
    return Calibration(
        envelope=envelope,
        original={
            **{b.field: b.current(hw) for b in searched_bounds(hw)},
            FLOOR_FIELD: float(getattr(hw, FLOOR_FIELD)),
        },
        fitted=fit.fitted,
        rows_train=train.height,
        rows_heldout=held.height,
        implausible_rows=implausible,
        train_mdape=mdape(measured, predicted["fitted", "train"]),
        heldout_mdape=mdape(measured_held, predicted["fitted", "held"]),
        original_train_mdape=mdape(measured, predicted["original", "train"]),
        original_heldout_mdape=mdape(measured_held, predicted["original", "held"]),
        by_op=by_op,
        evaluations=fit.evaluations + 4,
        bounds=fit.bounds,
        suspect=fit.suspect,
        bands=bands,
        band_coverage_heldout=bands.coverage(ops_held, predicted["fitted", "held"], measured_held),
        heldout_ratio=ratio_quantiles(measured_held, predicted["fitted", "held"]),
        choice=choice,
    )


def transfer(train: pl.DataFrame, test: pl.DataFrame, hw: HardwareEnvelope) -> dict:
    """Fit on every plausible row of `train`, score on the plausible rows of `test`: a plain
    dict with rows_train, rows_test, fitted, suspect, train_mdape, test_mdape, test_ratio
    (p10/p50/p90 of measured / predicted) and band_coverage (test rows inside the bands of the
    training residuals)."""
    train, _ = plausible_rows(train, hw)
    test, _ = plausible_rows(test, hw)
    if min(train.height, test.height) < MIN_ROWS // 2:
        raise ValueError(
            f"a transfer needs at least {MIN_ROWS // 2} plausible rows on each side, got "
            f"{train.height} to fit and {test.height} to test"
        )
    fit = fit_envelope(train, hw)
    measured, measured_test = train["latency_us"].to_numpy(), test["latency_us"].to_numpy()
    on_train = predict_kernels(train, fit.envelope)
    on_test = predict_kernels(test, fit.envelope)
    bands = bands_from_residuals(train["op"].to_numpy(), on_train, measured, "training rows")
    return {
        "rows_train": train.height,
        "rows_test": test.height,
        "fitted": dict(fit.fitted),
        "suspect": [dict(s) for s in fit.suspect],
        "train_mdape": mdape(measured, on_train),
        "test_mdape": mdape(measured_test, on_test),
        "test_ratio": ratio_quantiles(measured_test, on_test),
        "band_coverage": bands.coverage(test["op"].to_numpy(), on_test, measured_test),
    }


def leave_one_regime_out(frame: pl.DataFrame, hw: HardwareEnvelope, split: RegimeSplit) -> dict:
    """Fit on each side of a regime split and predict the other: {split, rule, directions:
    ["A -> B": transfer dict, ...], stability: field -> {A: value, B: value, spread}} where
    spread is |A - B| over the field's bound span (0: the regimes agree exactly)."""
    frame = as_plain_text(frame)
    side = split.side(frame, hw.units_per_core)
    a, b = frame.filter(pl.Series(side)), frame.filter(pl.Series(~side))
    name_a, name_b = split.sides
    forward, backward = transfer(a, b, hw), transfer(b, a, hw)
    stability = {}
    for name in forward["fitted"]:
        va, vb = forward["fitted"][name], backward["fitted"][name]
        bound = next((x for x in BOUNDS if x.field == name), None)
        span = (bound.upper - bound.lower) if bound else max(abs(va), abs(vb), 1e-12)
        stability[name] = {name_a: va, name_b: vb, "spread": abs(va - vb) / span}
    return {
        "split": split.name,
        "rule": split.rule,
        "directions": {f"{name_a} -> {name_b}": forward, f"{name_b} -> {name_a}": backward},
        "stability": stability,
    }


def regime_report(frame: pl.DataFrame, hw: HardwareEnvelope) -> list[dict]:
    """`leave_one_regime_out` for every split of `regimes.REGIME_SPLITS` on the GEMM rows."""
    gemm = as_plain_text(frame).filter(pl.col("op") == "gemm")
    return [leave_one_regime_out(gemm, hw, split) for split in REGIME_SPLITS]
