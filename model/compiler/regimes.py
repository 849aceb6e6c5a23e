"""Regimes of measured kernels and error bands from calibration residuals.

A *regime split* cuts telemetry rows into two sides by shape alone (never by measured time and
never by fitted parameters, so a split is the same whatever the envelope): leave-one-regime-out
fits the envelope on one side and predicts the other (`calibration.transfer`).

An *error band* is what the residuals of a calibration say about a new prediction: among the
residuals r = measured / predicted of the same op class and the same predicted-time class
(`band_key`), the 10th and 90th percentiles. A prediction p then carries [p10 x p, p90 x p]:
about 80% of kernels like it measured inside. A cell with fewer than `MIN_BAND_ROWS`
residuals falls back to its op class, then to all residuals.

With no calibration given, the bands come from the public A100 residuals of the a100-sxm
preset (`A100_BANDS_FILE`, shipped with provenance; `python -m model.compiler.a100_bands`
regenerates it and a test checks that regenerating gives the same table).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import polars as pl

BAND_QUANTILES = (0.10, 0.50, 0.90)
"""Quantiles of measured / predicted a band reports: low edge, centre, high edge."""

TIME_CLASSES_US = (10.0, 100.0)
"""Edges of the predicted-time classes, us: below 10 us the fixed costs (floor, fill) dominate;
10-100 us is one to a few waves; above 100 us the main loop dominates."""

MIN_BAND_ROWS = 30
"""Fewest residuals a band cell needs; below it the band falls back to the op class, then to
all residuals (a 10-90% interval from fewer rows moves by a tenth of its width per row)."""

BAND_DECIMALS = 4
"""Band edges are rounded to this many decimals (stable bytes on any machine)."""

A100_BANDS_FILE = Path(__file__).with_name("a100_error_bands.json")
"""The shipped bands from the public A100 residuals (regenerate: `python -m
model.compiler.a100_bands`)."""

BANDS_SCHEMA = "handoff-error-bands/1"

REGENERATE_COMMAND = "python -m model.compiler.a100_bands"


TIME_CLASS_NAMES = (
    f"<{TIME_CLASSES_US[0]:g}us",
    f"{TIME_CLASSES_US[0]:g}-{TIME_CLASSES_US[1]:g}us",
    f">={TIME_CLASSES_US[1]:g}us",
)
"""Names of the predicted-time classes, shortest first."""


def _cells(ops: np.ndarray, predicted_us: np.ndarray) -> tuple[list[str], np.ndarray]:
    """(distinct 'op|time class' names, (rows,) index of each row's name): strings are built
    once per distinct cell, not per row."""
    column = pl.Series(np.asarray(ops).astype(str), dtype=pl.String)  # polars factorizes fast
    unique_ops = column.unique().sort()
    op_index = (column.rank("dense").to_numpy() - 1).astype(np.int64)
    klass = np.searchsorted(TIME_CLASSES_US, np.asarray(predicted_us, np.float64), side="right")
    names = [f"{op}|{c}" for op in unique_ops.to_list() for c in TIME_CLASS_NAMES]
    return names, op_index * len(TIME_CLASS_NAMES) + klass


def time_class(predicted_us: np.ndarray) -> np.ndarray:
    """(rows,) str class of each predicted device time: '<10us', '10-100us' or '>=100us'."""
    klass = np.searchsorted(TIME_CLASSES_US, np.asarray(predicted_us, np.float64), side="right")
    return np.asarray(TIME_CLASS_NAMES)[klass]


def band_key(ops: np.ndarray, predicted_us: np.ndarray) -> np.ndarray:
    """(rows,) 'op|time class' band cell of each prediction."""
    names, index = _cells(ops, predicted_us)
    return np.asarray(names, dtype=object)[index].astype(str) if len(index) else np.array([])


@dataclass(frozen=True)
class RegimeSplit:
    """A split of telemetry rows into two regimes by shape.

    Attributes:
        name: short name (`size`, `k`, `waves`, `source`).
        sides: (name of the True side, name of the False side).
        rule: the rule in words (it goes into reports).
        side: frame -> (rows,) bool, True for the first side.
    """

    name: str
    sides: tuple[str, str]
    rule: str
    side: Callable[[pl.DataFrame, int], np.ndarray]


SMALL_M = 64
"""Rows of a 'small' GEMM: m <= 64 is decode-like (a few requests' tokens), one tile row."""

SMALL_K = 512
"""A 'short' reduction: k <= 512 is at most a few main-loop steps, so fill and epilogue weigh."""

REFERENCE_TILE = 128
"""Tile edge that defines single-wave vs multi-wave (a shape-only rule: 128 x 128 output tiles,
the common large-GEMM tile, counted against the device's units)."""


def _col(frame: pl.DataFrame, name: str) -> np.ndarray:
    return frame[name].cast(pl.Float64).fill_null(0.0).to_numpy()


def _small_m(frame: pl.DataFrame, units: int) -> np.ndarray:
    return _col(frame, "m") <= SMALL_M


def _short_k(frame: pl.DataFrame, units: int) -> np.ndarray:
    return _col(frame, "k") <= SMALL_K


def _one_wave(frame: pl.DataFrame, units: int) -> np.ndarray:
    tiles = np.ceil(_col(frame, "m") / REFERENCE_TILE) * np.ceil(_col(frame, "n") / REFERENCE_TILE)
    return tiles <= units


REGIME_SPLITS = (
    RegimeSplit("size", ("small m", "large m"), f"m <= {SMALL_M} vs m > {SMALL_M}", _small_m),
    RegimeSplit("k", ("short k", "long k"), f"k <= {SMALL_K} vs k > {SMALL_K}", _short_k),
    RegimeSplit(
        "waves",
        ("single wave", "multi-wave"),
        f"ceil(m/{REFERENCE_TILE}) x ceil(n/{REFERENCE_TILE}) tiles <= units vs more",
        _one_wave,
    ),
)
"""The GEMM regime splits of leave-one-regime-out (GEMM rows: m, n, k)."""


@dataclass(frozen=True)
class ErrorBands:
    """10-90% bands of measured / predicted per band cell, with where they came from.

    Attributes:
        cells: band key ('op|time class', 'op|all' or 'all') -> (rows, p10, p50, p90).
        provenance: how the residuals were obtained (envelope, data, command).
    """

    cells: dict[str, tuple[int, float, float, float]]
    provenance: str

    def ratios(self, ops: np.ndarray, predicted_us: np.ndarray) -> np.ndarray:
        """(rows, 3) p10, p50, p90 of measured/predicted for each prediction (fallbacks in the
        module docstring)."""
        names, index = _cells(ops, predicted_us)
        table = np.empty((len(names), 3))
        for i, key in enumerate(names):
            op = key.rsplit("|", 1)[0]
            cell = self.cells.get(key) or self.cells.get(f"{op}|all") or self.cells["all"]
            table[i] = cell[1:]
        return table[index] if len(index) else np.empty((0, 3))

    def band_us(self, ops: np.ndarray, predicted_us: np.ndarray) -> np.ndarray:
        """(rows, 2) [low, high] us: the 10-90% band of each prediction."""
        r = self.ratios(ops, predicted_us)
        p = np.asarray(predicted_us, dtype=np.float64)
        return np.stack([p * r[:, 0], p * r[:, 2]], axis=1)

    def coverage(self, ops: np.ndarray, predicted_us: np.ndarray, measured: np.ndarray) -> float:
        """Fraction of rows whose measured time lies inside their band (None-free: rows > 0)."""
        band = self.band_us(ops, predicted_us)
        inside = (measured >= band[:, 0]) & (measured <= band[:, 1])
        return float(np.mean(inside)) if len(inside) else float("nan")

    def as_dict(self) -> dict:
        """Plain JSON-ready form (stable key order)."""
        return {
            "schema": BANDS_SCHEMA,
            "provenance": self.provenance,
            "quantiles": list(BAND_QUANTILES),
            "cells": {
                k: {"rows": v[0], "p10": v[1], "p50": v[2], "p90": v[3]}
                for k, v in sorted(self.cells.items())
            },
        }

    @classmethod
    def from_dict(cls, data: dict) -> ErrorBands:
        """The inverse of `as_dict`."""
        cells = {
            k: (int(v["rows"]), float(v["p10"]), float(v["p50"]), float(v["p90"]))
            for k, v in data["cells"].items()
        }
        return cls(cells=cells, provenance=str(data["provenance"]))


def parse_bands(data: object) -> ErrorBands:
    """Bands from parsed JSON: a bands file (`BANDS_SCHEMA`) or a calibration's `--json` output
    (its `bands` key). A one-line ValueError names the field that is wrong."""
    if isinstance(data, dict) and "schema" not in data and isinstance(data.get("bands"), dict):
        data = data["bands"]
    if not isinstance(data, dict) or data.get("schema") != BANDS_SCHEMA:
        raise ValueError(
            f"not error bands: expected schema {BANDS_SCHEMA!r} (a bands file or the output "
            "of `workbench telemetry calibrate --json`)"
        )
    cells = data.get("cells")
    if not isinstance(cells, dict) or "all" not in cells:
        raise ValueError("bands.cells must map band cells to quantiles and include 'all'")
    parsed = {}
    for key, cell in cells.items():
        where = f"bands.cells.{key}"
        if not isinstance(cell, dict):
            raise ValueError(f"{where} must be a mapping of rows, p10, p50, p90")
        rows = cell.get("rows")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
            raise ValueError(f"{where}.rows must be a whole number >= 1")
        values = []
        for q in ("p10", "p50", "p90"):
            v = cell.get(q)
            if not isinstance(v, int | float) or isinstance(v, bool) or not 0 < v < 1e6:
                raise ValueError(f"{where}.{q} must be a positive number")
            values.append(float(v))
        if not values[0] <= values[1] <= values[2]:
            raise ValueError(f"{where}: p10 <= p50 <= p90 must hold")
        parsed[str(key)] = (rows, *values)
    provenance = data.get("provenance")
    return ErrorBands(cells=parsed, provenance=str(provenance or "bands given"))


def _quantiles(ratio: np.ndarray) -> tuple[int, float, float, float]:
    q = np.quantile(ratio, BAND_QUANTILES)
    return (len(ratio), *(round(float(v), BAND_DECIMALS) for v in q))


def bands_from_residuals(
    ops: np.ndarray, predicted_us: np.ndarray, measured_us: np.ndarray, provenance: str
) -> ErrorBands:
    """Bands from calibration residuals: every cell with at least `MIN_BAND_ROWS` rows, every op
    class, and all rows together."""
    ops = np.asarray(ops).astype(str)
    ratio = np.asarray(measured_us, np.float64) / np.asarray(predicted_us, np.float64)
    keys = band_key(ops, predicted_us)
    cells = {"all": _quantiles(ratio)}
    for op in sorted(set(ops.tolist())):
        sel = ops == op
        cells[f"{op}|all"] = _quantiles(ratio[sel])
    for key in sorted(set(keys.tolist())):
        sel = keys == key
        if sel.sum() >= MIN_BAND_ROWS:
            cells[key] = _quantiles(ratio[sel])
    return ErrorBands(cells=cells, provenance=provenance)


def bands_json(bands: ErrorBands) -> str:
    """The bands file's text (sorted keys, fixed indentation, trailing newline)."""
    data = bands.as_dict()
    cells = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in data["cells"].items())
    head = {k: v for k, v in data.items() if k != "cells"}
    return json.dumps(head, indent=1)[:-2] + ',\n "cells": {\n' + cells + "\n }\n}\n"


@lru_cache(maxsize=1)
def shipped_bands() -> ErrorBands:
    """The shipped A100 residual bands (`A100_BANDS_FILE`)."""
    return ErrorBands.from_dict(json.loads(A100_BANDS_FILE.read_text(encoding="utf-8")))
