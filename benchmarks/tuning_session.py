"""A scripted tuning session in the Tune step, for bench_app: keypress to updated chart, UI lag.

A fresh process opens the app headless at 120x40 on the default example, waits for the start-up
warm-up, goes to Tune and edits the working configuration key by key: arrow steps on max_batch
(each a new service table and run), on max_queue_delay_ms (a new run on the same table), and
the last character of a new down_proj tile (a new table). Every edit is a value not seen before,
so nothing comes from the cache. For each key it records the time from sending the key event
(as a terminal's input thread does) to the first frame handed to the terminal after the latency
chart was rebuilt with the new run: debounce, model run, chart rebuild and screen update. The
event-loop stall monitor runs through the whole session.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHILD_PRELUDE = r"""
import asyncio, json, sys, time
from dataclasses import asdict
from pathlib import Path
from textual import events
from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet
from workbench.app import WorkbenchApp, WorkbenchOptions
from workbench.core.session import open_working
from workbench.core.stall import StallMonitor
from workbench.widgets.charts import Chart

class Measured(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.frames = []  # perf_counter() of every frame handed to the terminal

    def _display(self, screen, renderable):
        super()._display(screen, renderable)
        if renderable is not None:
            self.frames.append(time.perf_counter())
"""
"""What every scripted app session's child starts with: imports and an app that records the time
of every frame it hands to the terminal (bench_serving_app uses it too)."""

CHILD = (
    CHILD_PRELUDE
    + r"""
TILES = ["64x128x64", "128x128x64", "128x256x64", "256x128x64", "64x256x64", "256x256x64",
         "128x64x64", "64x64x64", "256x64x64", "128x128x32"]


async def idle(app):
    # No worker runs and no form piece waits to mount (StepScreen.mount_later; trees without
    # it have nothing waiting).
    while any(not w.is_finished for w in app.workers) or getattr(app.screen, "mounting_later", False):
        await asyncio.sleep(0.02)

async def press(app, chart, key, timeout=10.0):
    before = chart.data
    sent = time.perf_counter()
    app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
    while chart.data is before:  # the new run's data has reached the chart ...
        await asyncio.sleep(0.001)
        if time.perf_counter() - sent > timeout:
            raise RuntimeError(f"the chart never updated after {key!r}")
    while not chart.drawn:  # ... it has been drawn from them ...
        await asyncio.sleep(0.001)
        if time.perf_counter() - sent > timeout:
            raise RuntimeError(f"the chart was never redrawn after {key!r}")
    while not [t for t in app.frames if t >= chart.built_at]:  # ... and handed to the terminal
        await asyncio.sleep(0.001)
        if time.perf_counter() - sent > timeout:
            raise RuntimeError(f"no frame after the chart's redraw after {key!r}")
    shown = min(t for t in app.frames if t >= chart.built_at)
    await idle(app)
    await asyncio.sleep(0.2)  # a pause between edits, as a person makes
    return (shown - sent) * 1000.0

async def main(drafts):
    path = example_path(DEFAULT_EXAMPLE)
    app = Measured(open_working(load_packet(path), Path(path)),
                   WorkbenchOptions(drafts_folder=Path(drafts)))
    monitor = StallMonitor()
    out = {"max_batch": [], "max_queue_delay_ms": [], "tile": []}
    async with app.run_test(size=(120, 40)) as pilot:
        await idle(app)
        await pilot.press("4")
        await idle(app)
        screen = app.screen
        chart = screen.query_one("#tune-latency", Chart)
        task = asyncio.create_task(monitor.run())
        runs = app.lab.model_runs
        for field, kind in (("tune-batch_policy-max_batch", "max_batch"),
                            ("tune-batch_policy-max_queue_delay_ms", "max_queue_delay_ms")):
            screen.editor(field).input.focus()
            await asyncio.sleep(0.1)
            for _ in range(10):
                out[kind].append(await press(app, chart, "up"))
        tile = screen.editor("tune-tile-down_proj")
        tile.input.focus()
        for text in TILES:
            tile.set_text(text[:-1])
            await asyncio.sleep(0.1)
            out["tile"].append(await press(app, chart, text[-1]))
        task.cancel()
        out["model_runs"] = app.lab.model_runs - runs
    out["stalls"] = asdict(monitor.summary())
    print(json.dumps(out))

asyncio.run(main(sys.argv[1]))
"""
)


def run_tuning_session(home: Path, environ: dict[str, str]) -> dict:
    """Run the session in a fresh process; its latencies (ms) per kind of edit and stalls."""
    done = subprocess.run(
        [sys.executable, "-P", "-c", CHILD, str(home / "drafts")],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"tuning session failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
