"""The file-by-file driver shared by the tabular readers: read, normalize, check, deduplicate.

Each reader supplies `normalize(raw) -> FileRows` for one file; `ingest` runs it over every path,
keeps the rows that pass, drops exact duplicates across all files (first occurrence kept), and
returns the frame with each row's provenance and the exclusion report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import polars as pl

from model.telemetry.checks import RowCheck, Tally
from model.telemetry.errors import ExclusionReport, RowRef, TelemetryError, raise_if_nothing_kept
from model.telemetry.tables import RawTable, read_table

DUPLICATE = "duplicate"


@dataclass(frozen=True, eq=False)
class Provenance:
    """Where each row of a normalized frame came from.

    Attributes:
        files: the files read, in the order given.
        file_index: (rows,) int32 index into `files`.
        file_row: (rows,) int64 0-based data row within its file.
        line: (rows,) int64 1-based line within its file, 0 where unknown (Parquet, JSON arrays).
    """

    files: tuple[str, ...]
    file_index: np.ndarray
    file_row: np.ndarray
    line: np.ndarray

    def ref(self, row: int, column: str, message: str) -> RowRef:
        """A `RowRef` pointing at row `row` of the normalized frame."""
        return RowRef(
            self.files[self.file_index[row]],
            int(self.line[row]),
            int(self.file_row[row]),
            column,
            message,
        )

    def where(self, row: int) -> str:
        """`FILE:LINE` (or `FILE: row N` where the line is unknown) of normalized row `row`."""
        return str(self.ref(row, "", "")).removesuffix(": ")

    def take(self, rows: np.ndarray) -> Provenance:
        """Provenance of the rows selected by an index or boolean array."""
        return Provenance(self.files, self.file_index[rows], self.file_row[rows], self.line[rows])


@dataclass(frozen=True, eq=False)
class FileRows:
    """One file normalized: every row typed (bad rows too), the checks and each row's first
    failed check, plus notes for the report."""

    typed: pl.DataFrame
    checks: list[RowCheck]
    codes: np.ndarray
    conversions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Ingested:
    """Rows kept from every file read, with provenance, report and notes.

    Attributes:
        frame: the kept rows, normalized (the reader's schema).
        provenance: per row, its file, data row and line.
        report: rows read, kept and excluded by reason, with the first excluded rows.
        conversions: per file and time column, how it was converted to the schema's unit.
        warnings: one-line notes (wrong extension, ignored columns, suspicious units...).
    """

    frame: pl.DataFrame
    provenance: Provenance
    report: ExclusionReport
    conversions: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def exclusion_counts(self) -> dict[str, int]:
        """Excluded rows per reason."""
        return self.report.counts


IngestedT = TypeVar("IngestedT", bound=Ingested)


def as_paths(paths: str | Path | Iterable[str | Path]) -> tuple[str, ...]:
    """One path or many, as a tuple of strings; no paths is an error."""
    if isinstance(paths, str | Path):
        return (str(paths),)
    out = tuple(str(p) for p in paths)
    if not out:
        raise TelemetryError("(no files)", "no telemetry files given")
    return out


def duplicate_rows(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Rows equal in every column to an earlier row: their indices and, for each, the index of
    the first row they repeat. Hashes find candidates; candidates are compared exactly."""
    hashed = frame.hash_rows(seed=0).is_duplicated()
    if not hashed.any():
        return np.empty(0, np.int64), np.empty(0, np.int64)
    columns = frame.columns
    candidates = (
        frame.with_row_index("__row")
        .filter(hashed)
        .with_columns(pl.col("__row").min().over(columns).alias("__first"))
        .filter(pl.col("__row") != pl.col("__first"))
    )
    return (
        candidates["__row"].to_numpy().astype(np.int64),
        candidates["__first"].to_numpy().astype(np.int64),
    )


def ingest(
    paths: str | Path | Iterable[str | Path],
    normalize: Callable[[RawTable], FileRows],
    descriptions: dict[str, str],
    result: type[IngestedT],
) -> IngestedT:
    """Read every file with `normalize`, keep rows that pass every check and are not duplicates,
    and fail fast when nothing is left."""
    files = as_paths(paths)
    tally = Tally(descriptions)
    frames, index, file_rows, lines = [], [], [], []
    conversions: list[str] = []
    warnings: list[str] = []
    for i, path in enumerate(files):  # files are few; each one is processed vectorized
        raw = read_table(path)
        rows = normalize(raw)
        tally.add_file(raw, rows.checks, rows.codes)
        keep = rows.codes < 0
        kept = np.flatnonzero(keep)
        frames.append(rows.typed.filter(pl.Series(keep)))
        index.append(np.full(len(kept), i, np.int32))
        file_rows.append(kept.astype(np.int64))
        lines.append(raw.line[kept])
        conversions.extend(rows.conversions)
        warnings.extend((*raw.warnings, *rows.warnings))
    frame = pl.concat(frames, how="vertical")
    provenance = Provenance(
        files, np.concatenate(index), np.concatenate(file_rows), np.concatenate(lines)
    )
    repeats, firsts = duplicate_rows(frame)
    if repeats.size:
        refs = [
            provenance.ref(int(r), "", f"same values as {provenance.where(int(f))}")
            for r, f in zip(repeats[:5], firsts[:5], strict=True)
        ]
        tally.add_rows(DUPLICATE, refs, int(repeats.size))
        keep = np.ones(frame.height, bool)
        keep[repeats] = False
        frame, provenance = frame.filter(pl.Series(keep)), provenance.take(keep)
    report = tally.report(frame.height)
    raise_if_nothing_kept(", ".join(files), report)
    return result(frame, provenance, report, tuple(conversions), tuple(warnings))


__all__ = [
    "DUPLICATE",
    "FileRows",
    "Ingested",
    "Provenance",
    "as_paths",
    "duplicate_rows",
    "ingest",
]
