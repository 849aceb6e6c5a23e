"""`workbench run --json` end to end on 1,000,000 requests of M/M/8, interpreter start-up included.

Run: `python -m benchmarks.bench_cli` (writes the `cli` section of BENCHMARKS.md). The packet is
the mapping example with its service pinned to exponential 1 ms, 8 cores, no batching, central
queue, every shape compiled (no fallback), Poisson arrivals at rho = 0.8: the M/M/8 the
runtime is checked against.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.report import write_section
from packets.examples import example_bytes

COMMAND = "python -m benchmarks.bench_cli"
REPEATS = 5
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


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        packet = mm8_packet(Path(tmp))
        one_run(packet)  # fills numba's on-disk cache, as any earlier run would have
        runs = [one_run(packet) for _ in range(REPEATS)]
    walls = [w for w, _ in runs]
    rss = max(r for _, r in runs)
    body = (
        "| measure | value | target |\n|---|---:|---:|\n"
        f"| `workbench run --json`, 1M requests M/M/8, median of {REPEATS} | "
        f"{statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}) | <= 1.5 s |\n"
        f"| peak RSS (largest run) | {rss:.0f} MiB | <= 400 MB |\n\n"
        "Fresh interpreter each run (start-up, imports, packet validation, 1M-request simulation, "
        "tail attribution re-runs, JSON). The numba cache is warm, as after any first run."
    )
    write_section("cli", "Command line end to end", COMMAND, body)


if __name__ == "__main__":
    main()
