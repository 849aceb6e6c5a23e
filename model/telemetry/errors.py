"""Errors and exclusion reports shared by every telemetry reader.

A file that cannot be read at all raises `TelemetryError` (one line, `FILE:LINE: column: message`).
A file that can be read but holds bad rows keeps its good rows: each bad row is excluded for
exactly one reason (the first check it fails), counted, and the first few are kept as `RowRef`s
so the report can point at them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

MAX_EXAMPLES = 5
"""How many excluded rows of each reason a report keeps as examples."""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def token(value: object, limit: int = 24) -> str:
    """A value from a file as a short printable token for an error message: repr-quoted, cut to
    `limit` characters, non-printable characters as `?` (never a long stretch of the file)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = "".join(c if c.isprintable() else "?" for c in text[: limit + 1])
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def clip(text: str, limit: int = 120) -> str:
    """A library's error text on one line, cut to `limit` characters (it may quote the file)."""
    line = _one_line(text)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def location(file: str, line: int = 0, column: str = "", row: int | None = None) -> str:
    """`FILE:LINE: column` (LINE left out when 0, i.e. unknown; `row N` used instead when given)."""
    where = f"{file}:{line}" if line else (f"{file}: row {row}" if row is not None else file)
    return f"{where}: {column}" if column else where


class TelemetryError(Exception):
    """Telemetry that cannot be used at all (unreadable, wrong columns, every row bad).

    `str(error)` is one line, `FILE:LINE: column: message`; LINE is 1-based and left out where it
    cannot be known (Parquet, whole-document JSON), column is left out for file-level problems.
    """

    def __init__(self, file: str, message: str, *, line: int = 0, column: str = "") -> None:
        self.file = str(file)
        self.line = int(line)
        self.column = column
        self.message = _one_line(message)
        super().__init__(f"{location(self.file, self.line, column)}: {self.message}")


@dataclass(frozen=True)
class RowRef:
    """One excluded row: where it is (file, 1-based line or 0 when unknown, 0-based data row
    within the file) and which column failed which check."""

    file: str
    line: int
    row: int
    column: str
    message: str

    def __str__(self) -> str:
        return f"{location(self.file, self.line, self.column, self.row)}: {self.message}"


@dataclass(frozen=True)
class Exclusion:
    """All rows excluded for one reason: how many, what the reason means, the first few rows."""

    reason: str
    description: str
    count: int
    examples: tuple[RowRef, ...] = ()


@dataclass(frozen=True)
class ExclusionReport:
    """Rows read, rows kept and, per reason, the rows excluded (reasons with zero rows left out).

    rows_read == rows_kept + sum of every exclusion's count.
    """

    rows_read: int
    rows_kept: int
    exclusions: tuple[Exclusion, ...] = field(default=())

    @property
    def counts(self) -> dict[str, int]:
        """Excluded rows per reason, in check order."""
        return {e.reason: e.count for e in self.exclusions}

    @property
    def excluded(self) -> int:
        """Total excluded rows."""
        return sum(e.count for e in self.exclusions)

    def lines(self) -> list[str]:
        """Human-readable report: one summary line, then one line per reason and per example."""
        out = [f"{self.rows_kept} of {self.rows_read} rows kept, {self.excluded} excluded"]
        for e in self.exclusions:
            out.append(f"  {e.reason}: {e.count} ({e.description})")
            out.extend(f"    {ref}" for ref in e.examples)
        return out

    def with_exclusion(self, exclusion: Exclusion) -> ExclusionReport:
        """This report after excluding `exclusion.count` more of the kept rows (merged into an
        existing entry of the same reason)."""
        if exclusion.count == 0:
            return self
        merged, found = [], False
        for e in self.exclusions:
            if e.reason == exclusion.reason:
                examples = (*e.examples, *exclusion.examples)[:MAX_EXAMPLES]
                e = Exclusion(e.reason, e.description, e.count + exclusion.count, examples)
                found = True
            merged.append(e)
        if not found:
            merged.append(exclusion)
        return ExclusionReport(self.rows_read, self.rows_kept - exclusion.count, tuple(merged))


def build_report(
    rows_read: int,
    rows_kept: int,
    counts: Mapping[str, int],
    examples: Mapping[str, Iterable[RowRef]],
    descriptions: Mapping[str, str],
) -> ExclusionReport:
    """Assemble a report from per-reason counts, in the order of `descriptions` (check order)."""
    exclusions = tuple(
        Exclusion(
            reason, description, counts[reason], tuple(examples.get(reason, ()))[:MAX_EXAMPLES]
        )
        for reason, description in descriptions.items()
        if counts.get(reason, 0) > 0
    )
    report = ExclusionReport(rows_read, rows_kept, exclusions)
    if report.rows_kept + report.excluded != rows_read:
        raise AssertionError(f"exclusion counts do not add up: {report.lines()[0]}")
    return report


def raise_if_nothing_kept(files: str, report: ExclusionReport) -> None:
    """Fail fast when every row was excluded, naming the reasons and the first example."""
    if report.rows_kept > 0:
        return
    reasons = ", ".join(f"{e.reason} {e.count}" for e in report.exclusions)
    first = next((str(e.examples[0]) for e in report.exclusions if e.examples), "")
    example = f"; first: {first}" if first else ""
    raise TelemetryError(files, f"all {report.rows_read} rows excluded ({reasons}){example}")
