"""`workbench run --json` end to end on 1,000,000 requests of M/M/8, interpreter start-up included;
and the CPU of a small `workbench run` against the CPU of importing its libraries.

Run: `python -m benchmarks.bench_cli` (writes the `cli` section of BENCHMARKS.md). The packet is
the mapping example with its service pinned to exponential 1 ms, 8 cores, no batching, central
queue, every shape compiled (no fallback), Poisson arrivals at rho = 0.8: the M/M/8 the
runtime is checked against. The small run is the default example with `--requests 2000`: its
CPU is mostly start-up, so the ratio to `python -c "import numpy, polars, yaml, pydantic"` (the
floor any command pays for its libraries) shows what start-up adds (target <= 2x).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import argument_parser, write_section
from packets.examples import DEFAULT_EXAMPLE, example_bytes

COMMAND = "python -m benchmarks.bench_cli"
REPEATS = 5
CPU_REPEATS = 9
IMPORTS = "import numpy, polars, yaml, pydantic"
EDITS = (
    (b"process: gamma\n      rate_per_s: 9.0\n      cv: 1.5", b"process: poisson\n      rate_per_s: 6400.0"),
    (b"requests: 20000", b"requests: 1000000"),
    (b"    cores: 2 ", b"    cores: 8 "),
    (b"    max_batch: 4\n    max_queue_delay_ms: 5.0", b"    max_batch: 1\n    max_queue_delay_ms: 0.0"),
    (b"    seq_len: [256, 512, 1024, 2048]\n  fallback:",
     b"    seq_len: [128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096]\n  fallback:"),
    (b"  placement: least-loaded\n  service:\n    source: model",
     b"  placement: central-queue\n  service:\n    source: distribution\n    dist: exponential\n    mean_ms: 1.0"),
)  # fmt: skip


def mm8_packet(folder: Path) -> Path:
    """The M/M/8 packet described in the module docstring."""
    raw = example_bytes("mapping-dynamic-shapes")
    for old, new in EDITS:
        assert old in raw, old
        raw = raw.replace(old, new, 1)
    path = folder / "mm8.yaml"
    path.write_bytes(raw)
    return path


# The `workbench` entry point, then this process's peak RSS (VmHWM) on stderr: getrusage of a
# child would also count the parent's memory at fork time.
SCRIPT = """
import sys
from workbench.cli import main
code = main(sys.argv[1:])
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")]
print(hwm[0].split()[1] if hwm else "0", file=sys.stderr)
sys.exit(code)
"""


def one_run(packet: Path) -> tuple[float, float]:
    """(wall s, peak RSS MiB) of one `workbench run --json` in a fresh interpreter."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "run", str(packet), "--json"],
        capture_output=True,
        check=True,
    )
    wall = time.perf_counter() - start
    assert b'"measured_requests": 900000' in done.stdout
    return wall, float(done.stderr.split()[-1]) / 1024


def child_cpu_s(argv: list[str]) -> float:
    """User + system CPU seconds of one child process running `argv` to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def small_run_cpu(folder: Path) -> tuple[list[float], list[float]]:
    """(import CPU s, `workbench run` CPU s), CPU_REPEATS each, interleaved so that machine
    load falls on both alike. The run is the console script's path (`python -m workbench`)."""
    packet = folder / "small.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    run = [sys.executable, "-m", "workbench", "run", str(packet), "--requests", "2000"]
    imports = [sys.executable, "-c", IMPORTS]
    child_cpu_s(run)  # numba's on-disk cache filled, the files in the page cache
    base, ours = [], []
    for _ in range(CPU_REPEATS):
        base.append(child_cpu_s(imports))
        ours.append(child_cpu_s(run))
    return base, ours


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        packet = mm8_packet(Path(tmp))
        one_run(packet)  # fills numba's on-disk cache, as any earlier run would have
        runs = [one_run(packet) for _ in range(REPEATS)]
        base, ours = small_run_cpu(Path(tmp))
    ratio = statistics.median(ours) / statistics.median(base)
    walls = [w for w, _ in runs]
    rss = max(r for _, r in runs)
    body = (
        "| measure | value | target |\n|---|---:|---:|\n"
        f"| `workbench run --json`, 1M requests M/M/8, median of {REPEATS} | "
        f"{statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}) | <= 1.5 s |\n"
        f"| peak RSS (largest run) | {rss:.0f} MiB | <= 400 MB |\n"
        f'| CPU (user+sys) of `python -c "{IMPORTS}"`, median of {CPU_REPEATS} | '
        f"{statistics.median(base) * 1000:.0f} ms (min {min(base) * 1000:.0f}, "
        f"max {max(base) * 1000:.0f}) | |\n"
        f"| CPU (user+sys) of `workbench run EXAMPLE --requests 2000` (default example), "
        f"median of {CPU_REPEATS} | {statistics.median(ours) * 1000:.0f} ms "
        f"(min {min(ours) * 1000:.0f}, max {max(ours) * 1000:.0f}): {ratio:.2f}x the imports | "
        f"<= 2x |\n\n"
        "Fresh interpreter each run (start-up, imports, packet validation, 1M-request simulation, "
        "tail attribution re-runs, JSON). The numba cache is warm, as after any first run. "
        "CPU is `getrusage(RUSAGE_CHILDREN)` around each child, the two commands interleaved. "
        f"1-minute load average when the run ended: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs (`uptime`)."
    )
    write_section("cli", "Command line end to end", COMMAND, body)


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line (no arguments: `--help` says what it measures)."""
    argument_parser("benchmarks.bench_cli", __doc__).parse_args(argv)
    main()


if __name__ == "__main__":
    cli()
