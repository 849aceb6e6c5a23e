"""Formatting of the workbench's units, one function per unit, shared by the CLI and the app.

Every number a user reads as milliseconds, a rate per second or a ratio goes through here, so a
figure reads the same in `workbench run`, the app's panels and the exported reports. Missing
values (None, or NaN from an empty group) print as `missing`: "n/a" in sentences, "-" in table
cells. Thousands are grouped with commas (`1,234.56`).
"""

from __future__ import annotations


def _absent(value: float | None) -> bool:
    return value is None or value != value  # NaN is the one value unequal to itself


def ms(value: float | None, *, digits: int = 2, unit: bool = True, missing: str = "n/a") -> str:
    """A duration in milliseconds: '1,234.56 ms' (unit False: '1,234.56', for a column headed
    in ms); `missing` for None or NaN."""
    if _absent(value):
        return missing
    text = f"{value:,.{digits}f}"
    return f"{text} ms" if unit else text


def per_s(value: float | None, *, digits: int = 1, missing: str = "n/a") -> str:
    """A rate per second: '248.9/s'; `missing` for None or NaN."""
    return missing if _absent(value) else f"{value:,.{digits}f}/s"


def ratio(value: float | None, *, digits: int = 2, missing: str = "n/a") -> str:
    """A dimensionless ratio (utilization, demand over capacity): '0.83'; `missing` for None
    or NaN."""
    return missing if _absent(value) else f"{value:.{digits}f}"
