"""The stall monitor measures event-loop lag: a deliberately blocked loop shows up as a stall."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import numpy as np
import pytest

from packets.errors import UsageError
from workbench.core.stall import STALL_MS, StallMonitor, summarize


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
