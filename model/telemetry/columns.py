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

UNIT_POWER = {
    **dict.fromkeys(("s", "sec", "secs", "seconds"), 0),
    **dict.fromkeys(("ms", "msec", "millis", "milliseconds"), -3),
    **dict.fromkeys(("us", "usec", "µs", "μs", "micros", "microseconds"), -6),
    **dict.fromkeys(("ns", "nsec", "nanos", "nanoseconds"), -9),
}
"""Time-unit suffixes accepted in column names -> the power of ten of seconds one unit is."""


def unit_factor(unit: str, target: str) -> float:
    """Multiplier from `unit` to `target` (both UNIT_POWER keys), exact for powers of ten."""
    return 10.0 ** (UNIT_POWER[unit] - UNIT_POWER[target])


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
    target_unit = target.rsplit("_", 1)[1]
    found, unitless = [], []
    for name in names:
        base, _, unit = name.rpartition("_")
        if base in bases and unit in UNIT_POWER:
            found.append(TimeColumn(name, base, unit, unit_factor(unit, target_unit)))
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


def _raw(frame: pl.DataFrame, name: str, file: str) -> pl.Series | None:
    """Column `name` as the file holds it (None when absent); nested JSON values are an error."""
    if name not in frame.columns:
        return None
    series = frame[name]
    if _is_nested(series.dtype):
        raise TelemetryError(file, "holds JSON lists/objects; expected plain values", column=name)
    if isinstance(series.dtype, pl.Categorical | pl.Enum):
        return series.cast(pl.String)
    return series


def _retry_rows(raw: pl.Series, parsed: pl.Series) -> pl.Series:
    """Indices of rows whose text did not parse as written (usually none: padded or odd text)."""
    return (raw.is_not_null() & parsed.is_null()).arg_true()


def _is_token(text: pl.Series, nan_is_missing: bool) -> pl.Series:
    tokens = NULL_TOKENS if nan_is_missing else tuple(t for t in NULL_TOKENS if t != "nan")
    return text.str.strip_chars().str.to_lowercase().is_in(tokens)


def number_column(
    frame: pl.DataFrame, name: str, file: str, *, nan_is_missing: bool = True
) -> tuple[pl.Series, pl.Series]:
    """Column `name` as (Float64 value, present).

    present is False where the cell is empty, absent or a null token (`NA`, `null`, and `nan`
    unless `nan_is_missing=False`); value is null where a present cell is not a number (then
    the row checks report it). Text parses as written first; only cells that fail are retried
    stripped, so padded numbers are accepted without stripping every cell.
    """
    rows = frame.height
    raw = _raw(frame, name, file)
    if raw is None or raw.dtype == pl.Null:
        return pl.Series(name, [None] * rows, pl.Float64), pl.Series(name, [False] * rows)
    if raw.dtype == pl.Boolean:
        return pl.Series(name, [None] * rows, pl.Float64), raw.is_not_null()
    if raw.dtype.is_numeric():
        value = raw.cast(pl.Float64)
        present = raw.is_not_null()
    else:
        text = raw.cast(pl.String)
        value = text.cast(pl.Float64, strict=False)
        present = text.is_not_null()
        retry = _retry_rows(text, value)
        if retry.len():
            odd = text.gather(retry)
            value = value.scatter(retry, odd.str.strip_chars().cast(pl.Float64, strict=False))
            present = present.scatter(retry, ~_is_token(odd, nan_is_missing))
    if nan_is_missing:
        present = present & ~value.is_nan().fill_null(False)
    return value.alias(name), present.alias(name)


def label_column(
    frame: pl.DataFrame, name: str, file: str, aliases: dict[str, str], dtype: pl.DataType
) -> tuple[pl.Series, pl.Series]:
    """Column `name` as (canonical label of dtype `dtype`, present): a cell maps through
    `aliases` as written, else stripped and lower-cased; unknown labels are null but present."""
    rows = frame.height
    raw = _raw(frame, name, file)
    if raw is None:
        return pl.Series(name, [None] * rows, dtype), pl.Series(name, [False] * rows)
    text = raw.cast(pl.String)
    value = text.replace_strict(aliases, default=None, return_dtype=dtype)
    present = text.is_not_null()
    retry = _retry_rows(text, value)
    if retry.len():
        odd = text.gather(retry)
        normalized = odd.str.strip_chars().str.to_lowercase()
        value = value.scatter(
            retry, normalized.replace_strict(aliases, default=None, return_dtype=dtype)
        )
        present = present.scatter(retry, ~_is_token(odd, True))
    return value.alias(name), present.alias(name)


def text_column(frame: pl.DataFrame, name: str, file: str) -> pl.Series:
    """Column `name` as stripped text, null where empty, absent or a null token."""
    raw = _raw(frame, name, file)
    if raw is None:
        return pl.Series(name, [None] * frame.height, pl.String)
    text = raw.cast(pl.String).str.strip_chars()
    short = (text.str.len_bytes() <= max(map(len, NULL_TOKENS))).arg_true()  # tokens are short
    if short.len():
        tokens = text.gather(short).str.to_lowercase().is_in(NULL_TOKENS)
        text = text.scatter(short.filter(tokens), None)
    return text.alias(name)


def is_whole(value: pl.Expr) -> pl.Expr:
    """True where a Float64 value is a finite whole number that int64 holds exactly."""
    return value.is_finite() & (value == value.floor()) & (value.abs() <= 2.0**53)


__all__ = [
    "NULL_TOKENS",
    "UNIT_POWER",
    "TimeColumn",
    "find_time_column",
    "is_whole",
    "label_column",
    "normalize_column_name",
    "number_column",
    "text_column",
    "unit_factor",
]
