"""Event-loop stall monitor: how late the UI loop wakes up, for benchmarks and debugging.

Textual-free (plain asyncio). A task sleeps `interval_s` again and again; the time it wakes
beyond that is lag the UI loop could not avoid (a long handler, a chart rebuilt on the loop, a
blocking write). The app runs it only when asked (`workbench open --stall-report FILE`).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

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
    """

    samples: int
    interval_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    stalls: int
    stalled_ms: float


def summarize(lags_ms: np.ndarray, interval_ms: float) -> StallSummary:
    """Statistics of measured lags (ms); all zero for an empty array."""
    lags = np.asarray(lags_ms, dtype=np.float64)
    if lags.size == 0:
        return StallSummary(0, interval_ms, 0.0, 0.0, 0.0, 0, 0.0)
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
    )


class StallMonitor:
    """Records event-loop lag while `run()` is being awaited (run it as a task or worker)."""

    def __init__(self, interval_s: float = 0.01) -> None:
        self.interval_s = interval_s
        self._lags_ms: list[float] = []

    async def run(self) -> None:
        """Sleep-and-measure forever (until cancelled)."""
        while True:
            start = time.perf_counter()
            await asyncio.sleep(self.interval_s)
            lag_s = time.perf_counter() - start - self.interval_s
            self._lags_ms.append(max(lag_s, 0.0) * 1000.0)

    def summary(self) -> StallSummary:
        """Statistics of every lag recorded so far."""
        return summarize(np.array(self._lags_ms), self.interval_s * 1000.0)

    def write_report(self, path: Path) -> None:
        """Write `summary()` as JSON to `path`."""
        path.write_text(json.dumps(asdict(self.summary()), indent=2) + "\n", encoding="utf-8")
