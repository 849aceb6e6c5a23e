"""Peak memory of `workbench run --json` up to the packet's request cap (10M requests).

Each run is the real command line in its own process, on a copy of the default example made
with `workbench examples copy`; its peak resident set comes from the kernel's accounting for that
one child (`os.wait4`'s ru_maxrss). This parent imports nothing but the standard library, so
the child's figure does not carry a large parent's pages across fork and exec.

Run: `python -m benchmarks.bench_memory` (writes the `memory` section of BENCHMARKS.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import argument_parser, write_section

COMMAND = "python -m benchmarks.bench_memory"
EXAMPLE = "fusion-tiling-llama-decode"
SIZES = (1_000, 1_000_000, 10_000_000)  # the smallest gives the fixed cost
TARGET_GB = 3.0  # issue 10, item 11: 10M requests of the default example


def workbench(*args: str) -> list[str]:
    return [sys.executable, "-m", "workbench", *args]


def peak_run(argv: list[str], stdout: Path) -> tuple[float, float]:
    """(wall s, peak RSS bytes) of one child process; raises if it fails."""
    with stdout.open("wb") as out:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return wall, usage.ru_maxrss * 1024.0  # ru_maxrss is KiB on Linux


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        packet = folder / f"{EXAMPLE}.yaml"
        subprocess.run(workbench("examples", "copy", EXAMPLE, str(packet)), check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        subprocess.run(
            workbench("run", str(packet), "--requests", "1000", "--json"),
            check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip  (numba's cache is warm)
        figures = {}
        for n in SIZES:
            out = folder / f"run-{n}.json"
            figures[n] = peak_run(
                workbench("run", str(packet), "--requests", str(n), "--json"), out
            )
    fixed = figures[SIZES[0]][1]
    lines = [
        f"`workbench run {EXAMPLE}.yaml --requests N --json` (the default example copied with",
        "`workbench examples copy`: 8 cores, batches of up to 8, fallback and contention on, so",
        "four runs: the run and three counterfactual re-runs). Peak RSS of the command's process.",
        "",
        "| requests | peak RSS | above the 1,000-request run, per request | wall | target |",
        "|---|---|---|---|---|",
    ]
    for n, (wall, peak) in figures.items():
        per_request = f"{(peak - fixed) / n:.0f} bytes" if n != SIZES[0] else "(fixed cost)"
        meets = "meets" if peak / 1e9 <= TARGET_GB else "MISSES"
        target = f"<= {TARGET_GB:.0f} GB: {meets}" if n == SIZES[-1] else ""
        lines.append(f"| {n:,} | {peak / 1e9:.2f} GB | {per_request} | {wall:.1f} s | {target} |")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines += [
        "",
        'Where the bytes go: model/runtime/README.md "Memory". Before that work (main at',
        "bce8c6a) the 10,000,000-request run peaked at 6.50 GB (`/usr/bin/time -f %M`).",
        "",
        f"1-minute load average when the run ended: {load:.1f} on {os.cpu_count()} CPUs "
        "(load slows the wall times, not the memory).",
    ]
    write_section("memory", "Runtime memory at the request cap", COMMAND, "\n".join(lines))


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line (no arguments: `--help` says what it measures)."""
    argument_parser("benchmarks.bench_memory", __doc__).parse_args(argv)
    main()


if __name__ == "__main__":
    cli()
