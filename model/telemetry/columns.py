"""Column names, time units and value parsing shared by the telemetry readers.

Names are normalized (`Latency (ms)` -> `latency_ms`), time columns are recognized by a base name
plus a unit suffix and converted, and values are parsed without failing the whole file: a value
that is not a number becomes null and is reported by the row checks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from model.telemetry.errors import TelemetryError

UNIT_SECONDS = {
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "seconds": 1.0,
    "ms": 1e-3,
    "msec": 1e-3,
    "millis": 1e-3,
    "milliseconds": 1e-3,
    "us": 1e-6,
    "usec": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "micros": 1e-6,
    "microseconds": 1e-6,
    "ns": 1e-9,
    "nsec": 1e-9,
    "nanos": 1e-9,
    "nanoseconds": 1e-9,
}
"""Time-unit suffixes accepted in column names, and the seconds one unit is."""

NULL_TOKENS = ("", "na", "n/a", "null", "none", "nan")
"""Cell texts that mean "no value" in shape and label columns (what pandas, R and Excel write)."""


def normalize_column_name(name: str) -> str:
    """Lower-case, `name (unit)`/`name [unit]` -> `name_unit`, spaces/dashes/dots -> `_`."""
    text = str(name).strip().lower()
    text = re.sub(r"\s*[\(\[]\s*([^\)\]]*?)\s*[\)\]]\s*$", r"_\1", text)
    return re.sub(r"[\s\-./]+", "_", text).strip("_")


@dataclass(frozen=True)
class TimeColumn:
    """A recognized time column: its normalized name, base name and the factor to the target unit."""

    name: str
    base: str
    unit: str
    factor: float

    def conversion(self, file: str, target: str) -> str:
        """One line saying how this column was converted (or that it was used as is)."""
        if self.name == target:
            return f"{file}: {self.name} used as is"
        return f"{file}: {self.name} -> {target} (x{self.factor:g})"


def find_time_column(
    file: str, names: Iterable[str], bases: tuple[str, ...], target: str, columns_found: str
) -> TimeColumn:
    """The single column named `<base>_<unit>` for a base in `bases`, with its factor to `target`
    (whose suffix is the target unit). Raise a one-line `TelemetryError` when there is none, when
    one has no unit, or when several compete."""
    target_seconds = UNIT_SECONDS[target.rsplit("_", 1)[1]]
    found, unitless = [], []
    for name in names:
        base, _, unit = name.rpartition("_")
        if base in bases and unit in UNIT_SECONDS:
            found.append(TimeColumn(name, base, unit, UNIT_SECONDS[unit] / target_seconds))
        elif name in bases:
            unitless.append(name)
    if len(found) > 1:
        exact = [t for t in found if t.name == target]
        if exact:
            return exact[0]
        listed = ", ".join(t.name for t in found)
        raise TelemetryError(file, f"several time columns ({listed}); keep one", column=target)
    if found:
        return found[0]
    if unitless:
        name = unitless[0]
        raise TelemetryError(
            file,
            f"time column without a unit; rename it {name}_us, {name}_ms, {name}_ns or {name}_s",
            column=name,
        )
    expected = ", ".join(f"{b}_{{s,ms,us,ns}}" for b in bases[:3])
    raise TelemetryError(
        file, f"no time column (expected {expected}, ...); columns found: {columns_found}"
    )


def _is_nested(dtype: pl.DataType) -> bool:
    return isinstance(dtype, pl.List | pl.Array | pl.Struct | pl.Object)


def as_text(frame: pl.DataFrame, name: str, file: str) -> pl.Expr:
    """Column `name` as stripped text (null when absent); nested JSON values are an error."""
    if name not in frame.columns:
        return pl.lit(None, pl.String)
    dtype = frame.schema[name]
    if _is_nested(dtype):
        raise TelemetryError(file, "holds JSON lists/objects; expected plain values", column=name)
    return pl.col(name).cast(pl.String).str.strip_chars()


def is_present(
    frame: pl.DataFrame, name: str, file: str, *, nan_is_missing: bool = True
) -> pl.Expr:
    """True where column `name` holds a value (not null, not a null token such as `NA`)."""
    if name not in frame.columns:
        return pl.lit(False)
    tokens = NULL_TOKENS if nan_is_missing else tuple(t for t in NULL_TOKENS if t != "nan")
    return ~as_text(frame, name, file).str.to_lowercase().is_in(tokens).fill_null(True)


def as_float(frame: pl.DataFrame, name: str, file: str) -> pl.Expr:
    """Column `name` as Float64: numbers kept, numeric text parsed (`nan`, `inf`, `1e3` included),
    anything else null."""
    if name not in frame.columns:
        return pl.lit(None, pl.Float64)
    dtype = frame.schema[name]
    if dtype.is_numeric():
        return pl.col(name).cast(pl.Float64)
    if dtype == pl.Boolean or dtype == pl.Null:
        return pl.lit(None, pl.Float64)
    return as_text(frame, name, file).cast(pl.Float64, strict=False)


def is_whole(value: pl.Expr) -> pl.Expr:
    """True where a Float64 value is a finite whole number that int64 holds exactly."""
    return value.is_finite() & (value == value.floor()) & (value.abs() <= 2.0**53)


__all__ = [
    "NULL_TOKENS",
    "UNIT_SECONDS",
    "TimeColumn",
    "as_float",
    "as_text",
    "find_time_column",
    "is_present",
    "is_whole",
    "normalize_column_name",
]
