"""Event-loop stall monitor: how late the UI loop wakes up, for benchmarks and debugging.

Textual-free (plain asyncio). A task sleeps `interval_s` again and again; the time it wakes
beyond that is lag the UI loop could not avoid (a long handler, a chart rebuilt on the loop, a
blocking write). The app runs it only when asked (`workbench open --stall-report FILE`).

The app starts it as it mounts and marks its first frame (`first_frame`): the statistics cover
the lags from then on, the UI a user works in; what came before (composing and laying out the
first screen, while nothing is on screen yet) is start-up, timed by its own target (warm start
to first frame, benchmarks/bench_app.py), and reported apart as `before_first_frame_max_ms`.
Likewise the app marks a quit the user confirmed (`quitting`): what follows is the exit (the
draft written at once, the terminal restored), with no UI left to answer a key, and its longest
lag is reported apart as `after_quit_max_ms`.

A number says that the loop stalled, not why. So while the loop is late by more than STALL_MS,
a thread of the monitor's own reads what the loop's thread runs (its Python stack, from
`sys._current_frames`), and the report names the WORST_KEPT longest stalls, when each came
and where the loop was: a handler of ours, a layout pass, a collection. Only file names,
lines and function names are kept, never a value.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packets.files import FileKind, atomic_write

if TYPE_CHECKING:
    import numpy as np

# The report is ~20 KiB (the stacks of WORST_KEPT stalls); written whole or not at all (a reader
# that polls for the file, as benchmarks/bench_app.py does, must never find it half-written).
STALL_REPORT = FileKind("stall report", 256 * 1024)

STALL_MS = 50.0  # a wake-up later than this is a stall a user can feel (one dropped keypress echo)
SAMPLE_S = 0.01  # how often the sampler looks whether the loop is late
WORST_KEPT = 5  # stalls the report names, longest first
SAMPLES_KEPT = 4  # stacks kept per stall: at STALL_MS late, then at each further STALL_MS
FRAMES_KEPT = 24  # frames kept per stack, innermost first


@dataclass(frozen=True)
class Stall:
    """One stall and where the UI loop was during it.

    Attributes:
        at_s: when it began, seconds after the first frame (after the monitor started, when
            no first frame was marked).
        lag_ms: how late the loop woke, ms.
        where: stacks of the loop's thread, one per sample (the first taken once the loop was
            STALL_MS late, then at each further STALL_MS), each innermost frame first, a frame
            as "path:line function" (`frame_name`).
    """

    at_s: float
    lag_ms: float
    where: tuple[tuple[str, ...], ...]


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
        after_quit_max_ms: the largest lag after the quit was marked (the exit, not in the
            statistics above; 0.0 when none was marked).
        worst: the WORST_KEPT longest stalls of those statistics, longest first.
    """

    samples: int
    interval_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    stalls: int
    stalled_ms: float
    before_first_frame_max_ms: float = 0.0
    after_quit_max_ms: float = 0.0
    worst: tuple[Stall, ...] = ()


def summarize(
    lags_ms: np.ndarray | list[float],
    interval_ms: float,
    before_first_frame_max_ms: float = 0.0,
    stalls: tuple[Stall, ...] = (),
    after_quit_max_ms: float = 0.0,
) -> StallSummary:
    """Statistics of measured lags (ms), all zero for an empty array, naming the WORST_KEPT
    longest of `stalls`."""
    import numpy as np  # a summary is made at exit; numpy is not one of start-up's imports

    lags = np.asarray(lags_ms, dtype=np.float64)
    before = round(float(before_first_frame_max_ms), 3)
    after = round(float(after_quit_max_ms), 3)
    worst = tuple(sorted(stalls, key=lambda s: (-s.lag_ms, s.at_s))[:WORST_KEPT])
    if lags.size == 0:
        return StallSummary(0, interval_ms, 0.0, 0.0, 0.0, 0, 0.0, before, after, worst)
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
        after_quit_max_ms=after,
        worst=worst,
    )


_PROJECT_ROOT = str(Path(__file__).resolve().parents[2]) + "/"


def frame_name(filename: str, lineno: int, function: str) -> str:
    """A frame as "path:line function", the path from site-packages or the project's root
    down (textual/_compositor.py:681 add_widget, workbench/screens/base.py:171 _mount_piece);
    the standard library's by file name alone (asyncio's events.py:80 _run)."""
    if "site-packages/" in filename:
        path = filename.rsplit("site-packages/", 1)[1]
    elif filename.startswith(_PROJECT_ROOT):
        path = filename[len(_PROJECT_ROOT) :]
    else:
        path = filename.rsplit("/", 1)[-1]
    return f"{path}:{lineno} {function}"


def stack_of(thread_id: int) -> tuple[str, ...]:
    """The Python stack thread `thread_id` runs now, innermost frame first (FRAMES_KEPT of
    them; () when the thread has ended)."""
    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return ()
    frames = traceback.walk_stack(frame)
    return tuple(
        frame_name(f.f_code.co_filename, line, f.f_code.co_name)
        for (f, line), _ in zip(frames, range(FRAMES_KEPT), strict=False)
    )


class StallMonitor:
    """Records event-loop lag while `run()` is being awaited (run it as a task or worker), and
    the loop's stack during each stall (a thread of its own, from `run()` until it ends)."""

    def __init__(self, interval_s: float = 0.01) -> None:
        self.interval_s = interval_s
        self._lags_ms: list[float] = []
        self._first_frame_at: int | None = None  # lags recorded before the first frame
        self._first_frame_s: float | None = None  # perf_counter() at the first frame
        self._quit_at: int | None = None  # lags recorded before the quit
        self._started_s = 0.0  # perf_counter() as `run` started
        self._lock = threading.Lock()  # the sampler's and the loop's use of the two below
        self._asleep_since = 0.0  # perf_counter() as the loop went to sleep (0: awake)
        self._samples: list[tuple[str, ...]] = []  # stacks taken during this sleep
        # (index of its lag, perf_counter() as it began, lag ms, stacks) per stall
        self._stalls: list[tuple[int, float, float, tuple[tuple[str, ...], ...]]] = []

    async def run(self) -> None:
        """Sleep-and-measure forever (until cancelled)."""
        self._started_s = time.perf_counter()
        done = threading.Event()
        sampler = threading.Thread(
            target=self._sample, args=(threading.get_ident(), done), name="stall-sampler",
            daemon=True,
        )  # fmt: skip
        sampler.start()
        try:
            while True:
                start = time.perf_counter()
                with self._lock:
                    self._asleep_since = start
                await asyncio.sleep(self.interval_s)
                lag_ms = max(time.perf_counter() - start - self.interval_s, 0.0) * 1000.0
                self._lags_ms.append(lag_ms)
                self._end_sleep(start, lag_ms)
        finally:
            done.set()

    def _end_sleep(self, asleep_since: float, lag_ms: float) -> None:
        """Keep the stacks sampled during the sleep that just ended when it was a stall (a
        wake-up over STALL_MS late); later samples belong to the next sleep."""
        with self._lock:
            samples, self._samples = self._samples, []
            self._asleep_since = 0.0
        if lag_ms > STALL_MS:
            began_s = asleep_since + self.interval_s
            self._stalls.append((len(self._lags_ms) - 1, began_s, lag_ms, tuple(samples)))

    def _sample(self, loop_thread: int, done: threading.Event) -> None:
        """Take the loop's stack once it is STALL_MS late, and again at each further STALL_MS
        (SAMPLES_KEPT at most), so a long stall shows its parts. Wakes every SAMPLE_S; a wake-up
        with the loop on time takes a few microseconds."""
        while not done.wait(SAMPLE_S):
            asleep_since = self._asleep_since
            late_ms = (time.perf_counter() - asleep_since - self.interval_s) * 1000.0
            if not asleep_since or late_ms <= STALL_MS * (len(self._samples) + 1):
                continue
            stack = stack_of(loop_thread)
            with self._lock:
                if asleep_since == self._asleep_since and len(self._samples) < SAMPLES_KEPT:
                    self._samples.append(stack)

    def first_frame(self) -> None:
        """Mark the first frame: lags recorded so far were start-up (see the module docstring).
        Only the first call counts."""
        if self._first_frame_at is None:
            self._first_frame_at = len(self._lags_ms)
            self._first_frame_s = time.perf_counter()

    def quitting(self) -> None:
        """Mark the quit the user confirmed: lags from now on are the exit (see the module
        docstring). Only the first call counts."""
        if self._quit_at is None:
            self._quit_at = len(self._lags_ms)

    def summary(self) -> StallSummary:
        """Statistics of the lags recorded from the first frame to the quit (from the start,
        to the end, when either was not marked), the largest lag before and after them apart,
        and the longest stalls among them."""
        lags_ms = self._lags_ms
        cut = self._first_frame_at or 0
        end = self._quit_at if self._quit_at is not None else len(lags_ms)
        before = max(lags_ms[:cut], default=0.0)
        after = max(lags_ms[end:], default=0.0)
        since = self._first_frame_s if self._first_frame_s is not None else self._started_s
        stalls = tuple(
            Stall(round(began - since, 3), round(lag_ms, 3), where)
            for index, began, lag_ms, where in self._stalls
            if cut <= index < end
        )
        lags = lags_ms[cut:end]
        return summarize(lags, self.interval_s * 1000.0, before, stalls, after)

    def write_report(self, path: Path) -> None:
        """Write `summary()` as JSON to `path`, atomically (temp file, fsync, rename); on failure
        `path` is as it was and UsageError says why in one line."""
        text = json.dumps(asdict(self.summary()), indent=2) + "\n"
        atomic_write(path, text.encode("utf-8"), kind=STALL_REPORT)
