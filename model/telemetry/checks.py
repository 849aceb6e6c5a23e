"""Row checks: find, for every row at once, the first check it fails, and report by reason.

A reader lists `RowCheck`s in priority order; `first_failures` evaluates them as one vectorized
polars expression and returns, per row, the index of the first failed check (-1 when all pass).
`Tally` accumulates counts and the first few examples per reason across files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from model.telemetry.errors import MAX_EXAMPLES, ExclusionReport, RowRef, build_report
from model.telemetry.raw import RawTable


@dataclass(frozen=True)
class RowCheck:
    """One validation rule: rows where `failed` is true are excluded for `reason`.

    `column` names the column in the file (as the user wrote it), `message` says what is wrong;
    the offending value is appended in the report. A null `failed` counts as passing.
    """

    reason: str
    column: str
    failed: pl.Expr
    message: str


def first_failures(frame: pl.DataFrame, checks: Sequence[RowCheck]) -> np.ndarray:
    """(rows,) int32: index into `checks` of the first check each row fails, -1 when none."""
    if not checks:
        return np.full(frame.height, -1, np.int32)
    chain = pl.when(checks[0].failed.fill_null(False)).then(pl.lit(0, pl.Int32))
    for i, check in enumerate(checks[1:], start=1):
        chain = chain.when(check.failed.fill_null(False)).then(pl.lit(i, pl.Int32))
    codes = frame.select(chain.otherwise(pl.lit(-1, pl.Int32)).alias("code"))["code"]
    return codes.to_numpy().astype(np.int32, copy=False)


def _shown(value: object) -> str:
    if value is None:
        return "empty"
    text = str(value)
    return repr(text if len(text) <= 40 else text[:37] + "...")


@dataclass
class Tally:
    """Exclusion counts and examples per reason, accumulated over the files of one read.

    `descriptions` fixes the reasons and their report order.
    """

    descriptions: dict[str, str]
    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[RowRef]] = field(default_factory=dict)
    rows_read: int = 0

    def add_file(self, raw: RawTable, checks: Sequence[RowCheck], codes: np.ndarray) -> None:
        """Count the rows of one file and its failed checks (`codes` from `first_failures`)."""
        self.rows_read += len(codes)
        failed = np.flatnonzero(codes >= 0)
        if failed.size == 0:
            return
        reasons = np.array([c.reason for c in checks])
        per_check = np.bincount(codes[failed], minlength=len(checks))
        for i in np.flatnonzero(per_check):
            self.counts[reasons[i]] = self.counts.get(reasons[i], 0) + int(per_check[i])
        for reason in dict.fromkeys(reasons[codes[failed]]):
            room = MAX_EXAMPLES - len(self.examples.setdefault(reason, []))
            if room <= 0:
                continue
            picked = failed[reasons[codes[failed]] == reason][:room]
            for row in picked:
                self.examples[reason].append(self._ref(raw, checks[codes[row]], int(row)))

    def add_rows(self, reason: str, refs: Sequence[RowRef], count: int) -> None:
        """Count `count` rows excluded for `reason` after the row checks (e.g. duplicates)."""
        if count:
            self.counts[reason] = self.counts.get(reason, 0) + count
            have = self.examples.setdefault(reason, [])
            have.extend(refs[: MAX_EXAMPLES - len(have)])

    @staticmethod
    def _ref(raw: RawTable, check: RowCheck, row: int) -> RowRef:
        message = check.message
        if check.reason == "malformed_row":
            message = raw.malformed_notes.get(row, message)
        else:
            source = next((n for n, o in raw.original_names.items() if o == check.column), None)
            if source is not None:
                message = f"{message} ({_shown(raw.frame[source][row])})"
        return RowRef(raw.path, int(raw.line[row]), row, check.column, message)

    def report(self, rows_kept: int) -> ExclusionReport:
        """The accumulated exclusions as a report."""
        return build_report(
            self.rows_read, rows_kept, self.counts, self.examples, self.descriptions
        )


__all__ = ["RowCheck", "Tally", "first_failures"]
