"""bench_review: the validation matrix from the app, cancelling it, and typing on the review steps.

On the mapping example (20,000 requests per run) after `workbench propose`, the full validation
matrix (3 loads x 2 mixes x 3 seeds, baseline and candidate: 36 runs):
- directly with `run_matrix`: cold (a fresh process: imports and the numba kernel loaded from its
  cache) and warm (the same process again);
- from the app, warm, headless: ctrl+r to the matrix recorded in the packet; the app's share is
  the difference (thread hand-off, progress, the checked edit, redrawing). The UI loop's lag is
  sampled every 10 ms while the matrix computes in its thread: it should keep waking on time;
- from the app in a real terminal (tmux 80x24), cold: ctrl+r to the recorded status on screen;
- cancelling: with 200,000 requests per run, ctrl+g to the "cancelled" line (the run stops
  between chunks of four runs, so this is at most one chunk's time);
- typing on a review screen: a key to its echo on screen (the Proposal step's rationale);
- step switches into the review steps: a digit key to the step's title (first visits: the
  screen is composed then).

Run: python -m benchmarks.bench_review
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_app import Tmux, env, ms
from benchmarks.report import argument_parser, write_section
from workbench.core.stall import StallMonitor, StallSummary

RUNS = 3
ECHO_KEYS = "abcdefghij"


def prepared(folder: Path) -> Path:
    """The mapping example with a proposal for add-4096-bucket (so the matrix can run)."""
    from packets.examples import example_bytes
    from workbench.cli import main

    path = folder / "mapping.yaml"
    path.write_bytes(example_bytes("mapping-dynamic-shapes"))
    code = main(["propose", str(path), "--candidate", "add-4096-bucket", "--rationale", "bench"])
    assert code == 0
    return path


COLD = """
import sys, time
start = time.perf_counter()
from packets.load import load_packet
from triage.review.matrix import MatrixSpec, run_matrix
run_matrix(load_packet(sys.argv[1]), "add-4096-bucket", MatrixSpec())
print(time.perf_counter() - start)
"""


def direct_matrix_s(path: Path, home: Path) -> tuple[list[float], list[float]]:
    """Seconds for the full default matrix called directly (no app): cold, in fresh processes
    (imports included), and warm, RUNS times each."""
    from packets.load import load_packet
    from triage.review.matrix import MatrixSpec, run_matrix

    cold = []
    for _ in range(RUNS):
        done = subprocess.run(
            [sys.executable, "-c", COLD, str(path)],
            capture_output=True, text=True, check=True, env=env(home),
        )  # fmt: skip
        cold.append(float(done.stdout.strip()))
    loaded = load_packet(path)
    run_matrix(loaded, "add-4096-bucket", MatrixSpec.quick())  # imports and numba loaded
    warm = []
    for _ in range(RUNS):
        start = time.perf_counter()
        run_matrix(loaded, "add-4096-bucket", MatrixSpec())
        warm.append(time.perf_counter() - start)
    return cold, warm


async def headless_matrix(path: Path, home: Path) -> tuple[list[float], StallSummary]:
    """Warm matrix runs from the app (headless, 80x24): seconds from ctrl+r to the matrix
    recorded in the packet (the same matrix again: the packet's value does not change), and the
    UI loop's lag sampled while they computed."""
    from packets.load import load_packet
    from workbench.app import WorkbenchApp, WorkbenchOptions
    from workbench.core.session import open_working

    app = WorkbenchApp(
        open_working(load_packet(path), path), WorkbenchOptions(drafts_folder=home / "drafts")
    )
    times: list[float] = []
    monitor = StallMonitor()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("7")
        await pilot.pause()
        for run in range(RUNS + 1):  # the first run loads the imports and numba: not counted
            sampler = asyncio.create_task(monitor.run()) if run else None
            start = time.perf_counter()
            await pilot.press("ctrl+r")
            await app.workers.wait_for_complete()  # the worker records the matrix, then ends
            if sampler is not None:
                times.append(time.perf_counter() - start)
                sampler.cancel()
            assert app.working.packet.outputs.validation_matrix is not None
            await pilot.pause()
    return times, monitor.summary()


def session(path: Path, home: Path) -> dict:
    """One app session in tmux; every latency in seconds, and the stall report."""
    tmux = Tmux()
    stalls = home / "stalls.json"
    command = [sys.executable, "-m", "workbench.cli", "open", "--stall-report", str(stalls)]
    out: dict = {"switches": [], "echo": []}
    try:
        tmux.start([*command, str(path)], env(home))
        tmux.wait_for("Workload profile")
        for number, title in ((6, "6 · Proposal"), (7, "7 · Validation"), (8, "8 · Release")):
            sent = time.perf_counter()
            tmux.keys(str(number), gap=0)
            out["switches"].append(tmux.wait_for(title) - sent)
        tmux.keys("6", gap=0.3)
        tmux.keys("Tab", "Tab", "Tab", "End", "C-u", gap=0.2)  # the rationale field, emptied
        typed = ""
        for char in ECHO_KEYS:
            typed += char
            sent = time.perf_counter()
            tmux.keys(char, gap=0)
            out["echo"].append(tmux.wait_for(typed) - sent)
        tmux.keys("Escape", "7", gap=0.3)
        tmux.wait_for("7 · Validation")
        sent = time.perf_counter()
        tmux.keys("C-r", gap=0)
        out["matrix"] = tmux.wait_for("current: 36 cells", timeout=120) - sent
        tmux.keys("Tab", "Tab", "Tab", "End", "C-u", *"200000", "Enter", gap=0.1)
        tmux.keys("C-r", gap=0)
        tmux.wait_for("of 36 cells", timeout=120)
        sent = time.perf_counter()
        tmux.keys("C-g", gap=0)
        out["cancel"] = tmux.wait_for("Matrix cancelled", timeout=120) - sent
        tmux.keys("C-q", gap=0.1)
        deadline = time.perf_counter() + 20
        while not stalls.exists() and time.perf_counter() < deadline:
            time.sleep(0.05)
        out["stalls"] = json.loads(stalls.read_text())
    finally:
        tmux.close()
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = prepared(root)
        cold, warm = direct_matrix_s(path, root)
        (root / "headless").mkdir()
        in_app_warm, lag = asyncio.run(headless_matrix(path, root / "headless"))
        sessions = []
        for run in range(RUNS):
            home = root / f"home-{run}"
            home.mkdir()
            copy = home / path.name  # each session starts from the proposed packet, no draft
            copy.write_bytes(path.read_bytes())
            sessions.append(session(copy, home))
    in_tmux = [s["matrix"] for s in sessions]
    cancels = [s["cancel"] for s in sessions]
    echo = [t for s in sessions for t in s["echo"]]
    switches = [t for s in sessions for t in s["switches"]]
    sessions_lag = [s["stalls"] for s in sessions]
    share = statistics.median(in_app_warm) - statistics.median(warm)
    body = f"""\
| Measure (full matrix: 36 runs of 20,000 requests) | Median (min-max) |
|---|---|
| `run_matrix` directly, cold: a fresh process, imports included ({RUNS} runs) | {ms(cold)} |
| `run_matrix` directly, warm ({RUNS} runs) | {ms(warm)} |
| From the app, warm, headless: ctrl+r to the matrix in the packet ({RUNS} runs) | {ms(in_app_warm)} |
| From the app in tmux, first run of the session: ctrl+r to the status on screen | {ms(in_tmux)} |
| Cancel with 200,000 requests per run: ctrl+g to the cancelled line in tmux | {ms(cancels)} |
| Key to echo, typing on the Proposal step in tmux ({len(echo)} keys) | {ms(echo)} |
| Step switch into steps 6-8 in tmux, digit to title, first visits ({len(switches)}) | {ms(switches)} |

The app's share of a warm matrix (headless median minus direct median): {share * 1000:.0f} ms.
UI-loop lag while the warm matrices computed in their thread ({lag.samples} wake-ups every
{lag.interval_ms:g} ms): p50 {lag.p50_ms:.1f} ms, p99 {lag.p99_ms:.1f} ms, max {lag.max_ms:.1f} ms,
{lag.stalls} over 50 ms. Over each whole tmux session (start, first visits of four steps,
typing, two matrices): p99 {", ".join(f"{s['p99_ms']:.0f}" for s in sessions_lag)} ms, max
{", ".join(f"{s['max_ms']:.0f}" for s in sessions_lag)} ms.
Terminal times include tmux's redraw and the ~2 ms polling of `capture-pane`.
"""
    write_section(
        "review", "Review steps: matrix, cancel, typing", "python -m benchmarks.bench_review", body
    )


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line (no arguments: `--help` says what it measures)."""
    argument_parser("benchmarks.bench_review", __doc__).parse_args(argv)
    main()


if __name__ == "__main__":
    cli()
