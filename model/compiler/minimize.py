"""Bounded Nelder-Mead: a derivative-free minimizer for the few efficiency parameters.

scipy is not a dependency and the calibration fits four or five parameters of a piecewise
smooth model (the autotuner's argmin makes the loss kinked), which is the case Nelder-Mead is
for. Points are clipped to the box [low, high]; the search stops when the simplex has shrunk
below `tolerance` (relative to the box) and its losses agree, or after `max_evaluations`.
Deterministic: the same function and start give the same path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

REFLECT, EXPAND, CONTRACT, SHRINK = 1.0, 2.0, 0.5, 0.5
"""The standard Nelder-Mead coefficients (Nelder and Mead 1965; Lagarias et al. 1998)."""


@dataclass(frozen=True)
class Minimum:
    """Where a search ended.

    Attributes:
        x: (D,) best point found.
        value: the loss there.
        evaluations: how many times the loss was evaluated.
    """

    x: np.ndarray
    value: float
    evaluations: int


def nelder_mead(
    loss: Callable[[np.ndarray], float],
    start: np.ndarray,
    steps: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    *,
    max_evaluations: int = 60,
    tolerance: float = 1e-3,
) -> Minimum:
    """Minimize `loss` over the box [low, high] from `start` (a simplex of `start` and `start`
    moved by `steps[i]` along each axis i; moves that leave the box go the other way)."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    span = np.maximum(high - low, 1e-12)
    x0 = np.clip(np.asarray(start, np.float64), low, high)
    points = [x0]
    for axis, step in enumerate(np.asarray(steps, np.float64)):
        p = x0.copy()
        p[axis] = x0[axis] + step if x0[axis] + step <= high[axis] else x0[axis] - step
        points.append(np.clip(p, low, high))
    values = [float(loss(p)) for p in points]
    evaluations = len(points)

    def clipped(p: np.ndarray) -> np.ndarray:
        return np.clip(p, low, high)

    while evaluations < max_evaluations:  # each step depends on the last: sequential
        order = np.argsort(values, kind="stable")
        points, values = [points[i] for i in order], [values[i] for i in order]
        size = np.max(np.abs(np.asarray(points) - points[0]) / span)
        if size < tolerance and values[-1] - values[0] <= tolerance * max(abs(values[0]), 1e-12):
            break
        centroid = np.mean(points[:-1], axis=0)
        reflected = clipped(centroid + REFLECT * (centroid - points[-1]))
        f_reflected = float(loss(reflected))
        evaluations += 1
        if f_reflected < values[0]:
            expanded = clipped(centroid + EXPAND * (centroid - points[-1]))
            f_expanded = float(loss(expanded))
            evaluations += 1
            better = f_expanded < f_reflected
            points[-1] = expanded if better else reflected
            values[-1] = f_expanded if better else f_reflected
        elif f_reflected < values[-2]:
            points[-1], values[-1] = reflected, f_reflected
        else:
            contracted = clipped(centroid + CONTRACT * (points[-1] - centroid))
            f_contracted = float(loss(contracted))
            evaluations += 1
            if f_contracted < values[-1]:
                points[-1], values[-1] = contracted, f_contracted
            else:
                for i in range(1, len(points)):
                    points[i] = clipped(points[0] + SHRINK * (points[i] - points[0]))
                    values[i] = float(loss(points[i]))
                    evaluations += 1
    best = int(np.argmin(values))
    return Minimum(points[best], values[best], evaluations)
