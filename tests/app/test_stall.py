"""The stall monitor measures event-loop lag: a deliberately blocked loop shows up as a stall."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import numpy as np
import pytest

import workbench.core.stall as stall_module
from packets.errors import UsageError
from workbench.core.stall import (
    SAMPLES_KEPT,
    STALL_MS,
    WORST_KEPT,
    StallMonitor,
    frame_name,
    summarize,
)


def test_summary_statistics() -> None:
    summary = summarize(np.array([1.0, 2.0, 3.0, 200.0]), 10.0)
    assert summary.samples == 4
    assert summary.max_ms == 200.0
    assert summary.stalls == 1 and summary.stalled_ms == 200.0
    assert summary.p50_ms == 2.5


def test_empty_summary_is_zero() -> None:
    assert summarize(np.array([]), 10.0).samples == 0


async def test_blocking_the_loop_is_recorded_as_a_stall(tmp_path: Path) -> None:
    monitor = StallMonitor(interval_s=0.005)
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.05)
    time.sleep(0.12)  # block the loop: the monitor wakes at least 120 ms late
    await asyncio.sleep(0.05)
    task.cancel()
    summary = monitor.summary()
    assert summary.stalls >= 1
    assert summary.max_ms >= 100.0 > STALL_MS
    report = tmp_path / "stalls.json"
    monitor.write_report(report)
    assert json.loads(report.read_text())["stalls"] == summary.stalls


async def test_lags_before_the_first_frame_are_start_up_not_statistics() -> None:
    monitor = StallMonitor(interval_s=0.005)
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.02)
    time.sleep(0.12)  # start-up: composing the first screen
    await asyncio.sleep(0.02)
    monitor.first_frame()
    await asyncio.sleep(0.03)
    time.sleep(0.06)  # a stall after the first frame
    await asyncio.sleep(0.02)
    monitor.first_frame()  # only the first mark counts
    task.cancel()
    summary = monitor.summary()
    assert summary.before_first_frame_max_ms >= 100.0
    assert STALL_MS < summary.max_ms < 100.0 and summary.stalls == 1


def test_report_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    """A poller that sees the report file never reads it half-written (temp file and rename),
    and a refused write leaves the folder as it was, with a one-line reason."""
    monitor = StallMonitor(interval_s=0.005)
    report = tmp_path / "stalls.json"
    monitor.write_report(report)
    assert json.loads(report.read_text())["samples"] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stalls.json"]
    missing = tmp_path / "no-such-folder" / "stalls.json"
    with pytest.raises(UsageError) as refused:
        monitor.write_report(missing)
    assert str(missing) in str(refused.value) and "\n" not in str(refused.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stalls.json"]


def _block_the_loop_in_a_named_handler(seconds: float) -> None:
    time.sleep(seconds)


async def test_a_stall_names_where_the_loop_was_and_when() -> None:
    """The report says which function held the loop, from a stack sampled during the stall,
    and when the stall came after the first frame."""
    monitor = StallMonitor(interval_s=0.005)
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.02)
    monitor.first_frame()
    await asyncio.sleep(0.1)
    _block_the_loop_in_a_named_handler(0.25)  # long enough for several samples
    await asyncio.sleep(0.03)
    task.cancel()
    summary = monitor.summary()
    (stall,) = [s for s in summary.worst if s.lag_ms > 200]
    assert 0.08 <= stall.at_s <= 0.5
    assert 2 <= len(stall.where) <= SAMPLES_KEPT  # at 50 ms late, then at each further 50
    for stack in stall.where:
        inner = [f for f in stack if f.endswith(" _block_the_loop_in_a_named_handler")]
        assert inner and inner[0].startswith("tests/app/test_stall.py:")
        assert any(f.endswith(" test_a_stall_names_where_the_loop_was_and_when") for f in stack)


async def test_the_report_keeps_the_longest_stalls_longest_first(tmp_path: Path) -> None:
    monitor = StallMonitor(interval_s=0.005)
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.02)
    time.sleep(0.09)  # start-up: not among the stalls once the first frame is marked
    await asyncio.sleep(0.02)
    monitor.first_frame()
    for blocked in (0.06, 0.07, 0.08, 0.09, 0.10, 0.11, 0.12):
        await asyncio.sleep(0.02)
        time.sleep(blocked)
    await asyncio.sleep(0.02)
    task.cancel()
    summary = monitor.summary()
    assert summary.stalls >= 7 and len(summary.worst) == WORST_KEPT
    lags = [s.lag_ms for s in summary.worst]
    assert lags == sorted(lags, reverse=True) and lags[0] == summary.max_ms
    assert all(s.at_s > 0 for s in summary.worst)
    report = tmp_path / "stalls.json"
    monitor.write_report(report)
    written = json.loads(report.read_text())["worst"]
    assert [w["lag_ms"] for w in written] == lags
    assert all(isinstance(frame, str) for w in written for stack in w["where"] for frame in stack)


def test_frame_names_are_paths_from_the_package_down() -> None:
    assert (
        frame_name("/x/.venv/lib/python3.11/site-packages/textual/_compositor.py", 681, "add")
        == "textual/_compositor.py:681 add"
    )
    assert frame_name(stall_module.__file__, 7, "run") == "workbench/core/stall.py:7 run"
    assert frame_name("/usr/lib/python3.11/asyncio/events.py", 80, "_run") == "events.py:80 _run"


async def test_the_exit_after_a_quit_is_timed_apart() -> None:
    """Once the user has confirmed a quit there is no UI left to answer a key: the exit's lag
    (the draft written at once) is reported apart, not as a stall of the session."""
    monitor = StallMonitor(interval_s=0.005)
    task = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.02)
    monitor.first_frame()
    await asyncio.sleep(0.02)
    time.sleep(0.07)  # a stall of the session
    await asyncio.sleep(0.02)
    monitor.quitting()
    time.sleep(0.15)  # the exit, in the handler that marked the quit
    await asyncio.sleep(0.02)
    task.cancel()
    summary = monitor.summary()
    assert summary.after_quit_max_ms >= 140.0
    assert STALL_MS < summary.max_ms < 140.0 and summary.stalls == 1
    assert [s.lag_ms for s in summary.worst] == [summary.max_ms]
