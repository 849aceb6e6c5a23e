"""Flag measured kernel times that are faster than physics allows.

The kernel-time predictor computes, per row, the fastest time the hardware envelope permits
(`min_time_us`: FLOPs at peak, bytes at peak bandwidth, launch floor). A measurement below it is
not evidence about the kernel but about the measurement (wrong unit, cached repeat, clock error):
such rows are flagged, kept out of fits and reported, never silently used.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl


class ImplausibleSplit(NamedTuple):
    """Result of `flag_implausible`: rows kept, how many were flagged, the first flagged rows."""

    kept: pl.DataFrame
    flagged_count: int
    examples: pl.DataFrame


def implausible_mask(
    latency_us: np.ndarray, min_time_us: np.ndarray, rel_tolerance: float = 0.0
) -> np.ndarray:
    """(rows,) bool: True where latency_us < min_time_us * (1 - rel_tolerance).

    Both arrays in microseconds. A NaN minimum (no bound known for that row) flags nothing.
    """
    latency = np.asarray(latency_us, dtype=np.float64)
    bound = np.asarray(min_time_us, dtype=np.float64)
    if latency.shape != bound.shape or latency.ndim != 1:
        raise ValueError(
            f"min_time_us has shape {bound.shape}, expected one value per row {latency.shape}"
        )
    if not 0.0 <= rel_tolerance < 1.0:
        raise ValueError(f"rel_tolerance must be in [0, 1), got {rel_tolerance}")
    with np.errstate(invalid="ignore"):
        return latency < bound * (1.0 - rel_tolerance)


def flag_implausible(
    frame: pl.DataFrame,
    min_time_us: np.ndarray,
    *,
    rel_tolerance: float = 0.0,
    max_examples: int = 5,
) -> ImplausibleSplit:
    """Split `frame` (with a `latency_us` column, us) into rows at or above their physical minimum
    and rows below it.

    Args:
        frame: kernel telemetry, e.g. `KernelTelemetry.frame`.
        min_time_us: (rows,) fastest possible time of each row under the envelope, us.
        rel_tolerance: fraction of the bound a measurement may undercut before it is flagged
            (measurement rounding); 0 flags anything faster than the bound.
        max_examples: how many flagged rows to return as examples.

    Returns:
        kept rows (order preserved), the number flagged, and the first `max_examples` flagged rows
        with their 0-based `row` in `frame` and their `min_time_us`.
    """
    flagged = implausible_mask(frame["latency_us"].to_numpy(), min_time_us, rel_tolerance)
    first = np.flatnonzero(flagged)[:max_examples]
    examples = (
        frame[first]
        .with_columns(min_time_us=pl.Series(np.asarray(min_time_us, np.float64)[first]))
        .insert_column(0, pl.Series("row", first, dtype=pl.Int64))
    )
    return ImplausibleSplit(frame.filter(pl.Series(~flagged)), int(flagged.sum()), examples)


__all__ = ["ImplausibleSplit", "flag_implausible", "implausible_mask"]
