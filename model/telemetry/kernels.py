"""Kernel telemetry: measured per-kernel times in the schema of shared/data/measured.

`read_kernel_telemetry(paths)` reads CSV/TSV, Parquet, NDJSON or JSON-array files, converts the
time column to microseconds, checks every row and returns the rows that pass, with each row's
file and line and a report of the excluded rows by reason. See model/telemetry/README.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl

from model.telemetry.checks import RowCheck, first_failures
from model.telemetry.columns import (
    find_time_column,
    is_whole,
    label_column,
    number_column,
    text_column,
)
from model.telemetry.errors import Exclusion, TelemetryError
from model.telemetry.ingest import DUPLICATE, FileRows, Ingested, ingest
from model.telemetry.plausibility import implausible_mask
from model.telemetry.raw import RawTable
from model.telemetry.vocab import (
    DTYPE_ALIASES,
    DTYPE_DTYPE,
    DTYPES,
    INT_SHAPE_COLUMNS,
    KERNEL_SCHEMA,
    KIND_ALIASES,
    KIND_DTYPE,
    KINDS,
    OP_DTYPE,
    OP_SHAPE_COLUMNS,
    OPS,
    OPTIONAL_SHAPE_COLUMNS,
    SHAPE_COLUMNS,
)

TIME_BASES = ("latency", "duration", "dur", "kernel_time", "elapsed")
"""Accepted time-column base names; each needs a unit suffix (`latency_ms`, `duration_ns`...)."""

LAUNCH_FLOOR_US = 1.0
"""A file whose median kernel time is below this (us) gets a unit warning: no device kernel
finishes faster than its launch floor (~2.5 us device-side on A100-class GPUs, NOTES.md)."""

IMPLAUSIBLE = "implausible"

KERNEL_REASONS: dict[str, str] = {
    "malformed_row": "not a well-formed record (CSV field count, NDJSON line not an object)",
    "unknown_op": f"op empty or not one of {', '.join(OPS)}",
    "unknown_dtype": f"dtype empty or not one of {', '.join(DTYPES)} (or an alias)",
    "missing_shape": "a shape column the op needs is empty",
    "bad_shape": "shape value not a whole number >= 1, or heads not a multiple of kv_heads",
    "unknown_kind": f"elementwise kind not one of {', '.join(KINDS)} (or an alias)",
    "foreign_shape": "a shape column the row's op does not use is set",
    "missing_latency": "time empty or not a number",
    "nonfinite_latency": "time NaN or infinite",
    "nonpositive_latency": "time zero or negative",
    DUPLICATE: "every column equal to an earlier row (any file read)",
}
"""Exclusion reasons of `read_kernel_telemetry`, in check order; a row counts for its first."""

IMPLAUSIBLE_DESCRIPTION = "faster than the physical minimum time under the envelope"


@dataclass(frozen=True, eq=False)
class KernelTelemetry(Ingested):
    """Kernel telemetry read from one or more files.

    `frame` has the columns and dtypes of `vocab.KERNEL_SCHEMA` (latency_us in us; shape columns
    an op does not use are null), rows in file order then row order; the other attributes are
    described on `Ingested`.
    """

    def flag_implausible(
        self, min_time_us: np.ndarray, *, rel_tolerance: float = 0.0
    ) -> KernelTelemetry:
        """These rows without those faster than `min_time_us` (us, one per row, from the
        predictor); they are counted in the report as `implausible` with their file and line."""
        flagged = implausible_mask(self.frame["latency_us"].to_numpy(), min_time_us, rel_tolerance)
        rows = np.flatnonzero(flagged)
        bound = np.asarray(min_time_us, np.float64)
        latency = self.frame["latency_us"]
        examples = tuple(
            self.provenance.ref(
                int(r),
                "latency_us",
                f"{latency[int(r)]:.4g} us measured, physical minimum {bound[r]:.4g} us",
            )
            for r in rows[:5]
        )
        exclusion = Exclusion(IMPLAUSIBLE, IMPLAUSIBLE_DESCRIPTION, int(rows.size), examples)
        keep = ~flagged
        return replace(
            self,
            frame=self.frame.filter(pl.Series(keep)),
            provenance=self.provenance.take(keep),
            report=self.report.with_exclusion(exclusion),
        )


def read_kernel_telemetry(
    paths: str | Path | Iterable[str | Path],
    *,
    dtype: str | None = None,
    hardware: str | None = None,
    source: str | None = None,
) -> KernelTelemetry:
    """Read, normalize and validate kernel telemetry files.

    Args:
        paths: one file or several (.csv/.tsv, .parquet, .ndjson/.jsonl/.json; the content
            decides when the extension is wrong).
        dtype, hardware, source: values for files that lack that column (`source` defaults to
            the file name).

    Raises:
        TelemetryError: a file is empty, header-only, not text/Parquet, lacks a required column
            or a time column with a unit, or every row is excluded.
    """
    defaults = {"dtype": dtype, "hardware": hardware, "source": source}
    if dtype is not None and dtype.lower() not in DTYPE_ALIASES:
        raise ValueError(f"dtype={dtype!r} is not a known dtype ({', '.join(DTYPES)})")
    return ingest(paths, lambda raw: _normalize(raw, defaults), KERNEL_REASONS, KernelTelemetry)


def _require_columns(raw: RawTable, ops: pl.Series, defaults: dict[str, str | None]) -> None:
    columns = raw.frame.columns
    for name in ("op", "dtype"):
        if name not in columns and defaults.get(name) is None:
            raise TelemetryError(
                raw.path, f"column missing (columns found: {raw.columns_found})", column=name
            )
    present = set(ops.drop_nulls().unique().cast(pl.String))
    for op in (op for op in OPS if op in present):
        absent = [c for c in OP_SHAPE_COLUMNS[op] if c not in columns]
        if absent:
            need = ", ".join(OP_SHAPE_COLUMNS[op])
            raise TelemetryError(
                raw.path,
                f"column missing; {op} rows need {need} (columns found: {raw.columns_found})",
                column=absent[0],
            )


def _users(column: str) -> list[str]:
    return [op for op, cols in OP_SHAPE_COLUMNS.items() if column in cols]


def _accepting(column: str) -> list[str]:
    """Ops whose rows may set `column` (required or optional)."""
    optional = [op for op, cols in OPTIONAL_SHAPE_COLUMNS.items() if column in cols]
    return _users(column) + optional


def _with_default(value: pl.Series, present: pl.Series, default: str | None) -> pl.Series:
    """`value` where the cell holds something, `default` where it is empty."""
    if default is None:
        return value
    return pl.select(
        pl.when(present).then(value).otherwise(pl.lit(default, value.dtype))
    ).to_series()


def _normalize(raw: RawTable, defaults: dict[str, str | None]) -> FileRows:
    frame, file = raw.frame, raw.path
    time = find_time_column(file, frame.columns, TIME_BASES, "latency_us", raw.columns_found)
    op, _ = label_column(frame, "op", file, dict(zip(OPS, OPS, strict=True)), OP_DTYPE)
    _require_columns(raw, op, defaults)
    shown = {**{c: c for c in KERNEL_SCHEMA}, **raw.original_names}
    known = {*KERNEL_SCHEMA, time.name}
    ignored = [raw.original_names[c] for c in frame.columns if c not in known]
    warnings = [f"{file}: ignored columns: {', '.join(ignored)}"] if ignored else []

    dtype, dtype_set = label_column(frame, "dtype", file, DTYPE_ALIASES, DTYPE_DTYPE)
    default_dtype = DTYPE_ALIASES[defaults["dtype"].lower()] if defaults["dtype"] else None
    kind, kind_set = label_column(frame, "kind", file, KIND_ALIASES, KIND_DTYPE)
    numbers = {c: number_column(frame, c, file) for c in (*INT_SHAPE_COLUMNS, "tp")}
    latency, latency_set = number_column(frame, time.name, file, nan_is_missing=False)
    texts = {c: text_column(frame, c, file) for c in ("layer_op", "hardware", "source")}
    work = pl.DataFrame(
        [
            pl.Series("malformed", raw.malformed),
            op.alias("op"),
            _with_default(dtype, dtype_set, default_dtype).alias("dtype"),
            *[value.alias(c) for c, (value, _) in numbers.items()],
            *[present.alias(f"{c}__set") for c, (_, present) in numbers.items()],
            kind.alias("kind"),
            kind_set.alias("kind__set"),
            (latency * time.factor).alias("latency_us"),
            latency_set.alias("latency__set"),
            texts["layer_op"],
            texts["hardware"].fill_null(pl.lit(defaults["hardware"], pl.String)),
            texts["source"].fill_null(defaults["source"] or Path(file).name),
        ]
    )
    checks = _checks(shown, time.name)
    codes = first_failures(work, checks)
    typed = work.select(
        pl.when(pl.col(f"{c}__set")).then(pl.col(c).cast(pl.Int64, strict=False)).alias(c)
        if KERNEL_SCHEMA[c] == pl.Int64
        else pl.col(c)
        for c in KERNEL_SCHEMA
    )
    if "hardware" not in frame.columns and defaults["hardware"] is None:
        warnings.append(f"{file}: no hardware column; pass hardware= to name the device")
    warnings.extend(_unit_warnings(file, typed["latency_us"].to_numpy()[codes < 0], time.name))
    return FileRows(typed, checks, codes, (time.conversion(file, "latency_us"),), tuple(warnings))


def _checks(shown: dict[str, str], time_name: str) -> list[RowCheck]:
    """Every kernel row check, in the order of KERNEL_REASONS."""
    op = pl.col("op")
    checks = [
        RowCheck("malformed_row", "", pl.col("malformed"), "malformed row"),
        RowCheck("unknown_op", shown["op"], op.is_null(), "unknown op"),
        RowCheck("unknown_dtype", shown["dtype"], pl.col("dtype").is_null(), "unknown dtype"),
    ]
    for c in SHAPE_COLUMNS:
        users = _users(c)
        checks.append(
            RowCheck(
                "missing_shape",
                shown[c],
                op.is_in(users) & ~pl.col(f"{c}__set"),
                f"{'/'.join(users)} rows need it",
            )
        )
    for c in (*INT_SHAPE_COLUMNS, "tp"):
        value = pl.col(c)
        applies = op.is_in(_accepting(c)) if c != "tp" else pl.lit(True)
        checks.append(
            RowCheck(
                "bad_shape",
                shown[c],
                applies & pl.col(f"{c}__set") & ~(is_whole(value) & (value >= 1)).fill_null(False),
                "not a whole number >= 1",
            )
        )
    heads, kv_heads = pl.col("heads"), pl.col("kv_heads")
    checks.append(
        RowCheck(
            "bad_shape",
            shown["kv_heads"],
            op.is_in(_users("heads")) & (heads % kv_heads != 0),
            "heads is not a multiple of kv_heads",
        )
    )
    checks.append(
        RowCheck(
            "unknown_kind",
            shown["kind"],
            (op == "elementwise") & pl.col("kind__set") & pl.col("kind").is_null(),
            "unknown kind",
        )
    )
    for c in SHAPE_COLUMNS:
        checks.append(
            RowCheck(
                "foreign_shape",
                shown[c],
                ~op.is_in(_accepting(c)) & pl.col(f"{c}__set"),
                "set, but this row's op does not use it",
            )
        )
    latency, name = pl.col("latency_us"), shown.get(time_name, time_name)
    checks += [
        RowCheck(
            "missing_latency",
            name,
            ~pl.col("latency__set") | latency.is_null(),
            "empty or not a number",
        ),
        RowCheck("nonfinite_latency", name, ~latency.is_finite(), "NaN or infinite"),
        RowCheck("nonpositive_latency", name, latency <= 0, "zero or negative"),
    ]
    return checks


def _unit_warnings(file: str, latency_us: np.ndarray, column: str) -> list[str]:
    """Warn when a file's median kernel time is outside what kernels physically take."""
    if latency_us.size == 0:
        return []
    median = float(np.median(latency_us))
    if median < LAUNCH_FLOOR_US:
        return [
            f"{file}: median kernel time {median:.3g} us is below the ~{LAUNCH_FLOOR_US:g} us "
            f"launch floor: is {column} really in the unit its name says?"
        ]
    if median > 1e6:
        return [
            f"{file}: median kernel time {median:.3g} us is over 1 s per kernel: "
            f"is {column} really in the unit its name says?"
        ]
    return []


__all__ = [
    "IMPLAUSIBLE",
    "KERNEL_REASONS",
    "TIME_BASES",
    "KernelTelemetry",
    "read_kernel_telemetry",
]
