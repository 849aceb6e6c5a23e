"""Event-loop stall monitor: how late the UI loop wakes up, for benchmarks and debugging.

Textual-free (plain asyncio). A task sleeps `interval_s` again and again; the time it wakes
beyond that is lag the UI loop could not avoid (a long handler, a chart rebuilt on the loop, a
blocking write). The app runs it only when asked (`workbench open --stall-report FILE`).

The app starts it as it mounts and marks its first frame (`first_frame`): the statistics cover
the lags from then on, the UI a user works in; what came before (composing and laying out the
first screen, while nothing is on screen yet) is start-up, timed by its own target (warm start
to first frame, benchmarks/bench_app.py), and reported apart as `before_first_frame_max_ms`.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from packets.files import FileKind, atomic_write

# The report is a few hundred bytes; written whole or not at all (a reader that polls for the
# file, as benchmarks/bench_app.py does, must never find it half-written).
STALL_REPORT = FileKind("stall report", 64 * 1024)

STALL_MS = 50.0  # a wake-up later than this is a stall a user can feel (one dropped keypress echo)


@dataclass(frozen=True)
class StallSummary:
    """Lag statistics over one run, milliseconds.

    Attributes:
        samples: wake-ups measured.
        interval_ms: the sleep each wake-up was scheduled after.
        p50_ms, p99_ms, max_ms: lag percentiles and maximum.
        stalls: wake-ups later than STALL_MS.
        stalled_ms: total lag summed over those stalls.
        before_first_frame_max_ms: the largest lag before the first frame (start-up, not in
            the statistics above; 0.0 when no first frame was marked).
    """

    samples: int
    interval_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    stalls: int
    stalled_ms: float
    before_first_frame_max_ms: float = 0.0


def summarize(
    lags_ms: np.ndarray, interval_ms: float, before_first_frame_max_ms: float = 0.0
) -> StallSummary:
    """Statistics of measured lags (ms); all zero for an empty array."""
    lags = np.asarray(lags_ms, dtype=np.float64)
    before = round(float(before_first_frame_max_ms), 3)
    if lags.size == 0:
        return StallSummary(0, interval_ms, 0.0, 0.0, 0.0, 0, 0.0, before)
    over = lags[lags > STALL_MS]
    p50, p99 = np.percentile(lags, [50, 99])
    return StallSummary(
        samples=int(lags.size),
        interval_ms=interval_ms,
        p50_ms=round(float(p50), 3),
        p99_ms=round(float(p99), 3),
        max_ms=round(float(lags.max()), 3),
        stalls=int(over.size),
        stalled_ms=round(float(over.sum()), 3),
        before_first_frame_max_ms=before,
    )


class StallMonitor:
    """Records event-loop lag while `run()` is being awaited (run it as a task or worker)."""

    def __init__(self, interval_s: float = 0.01) -> None:
        self.interval_s = interval_s
        self._lags_ms: list[float] = []
        self._first_frame_at: int | None = None  # lags recorded before the first frame

    async def run(self) -> None:
        """Sleep-and-measure forever (until cancelled)."""
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.interval_s)
            lag_s = time.perf_counter() - start - self.interval_s
            self._lags_ms.append(max(lag_s, 0.0) * 1000.0)

    def first_frame(self) -> None:
        """Mark the first frame: lags recorded so far were start-up (see the module docstring).
        Only the first call counts."""
        if self._first_frame_at is None:
            self._first_frame_at = len(self._lags_ms)

    def summary(self) -> StallSummary:
        """Statistics of the lags recorded since the first frame (every lag when none was
        marked), with the largest before it."""
        cut = self._first_frame_at or 0
        before = max(self._lags_ms[:cut], default=0.0)
        return summarize(np.array(self._lags_ms[cut:]), self.interval_s * 1000.0, before)

    def write_report(self, path: Path) -> None:
        """Write `summary()` as JSON to `path`, atomically (temp file, fsync, rename); on failure
        `path` is as it was and UsageError says why in one line."""
        text = json.dumps(asdict(self.summary()), indent=2) + "\n"
        atomic_write(path, text.encode("utf-8"), kind=STALL_REPORT)
