"""The `workbench` program starts numpy's OpenBLAS with one thread unless the user chose a
number (workbench.entry.one_blas_thread): its idle threads spin ~0.1 s of a core at every start.

The count is read from OpenBLAS itself (its `get_num_threads`, found in the library numpy
loaded), at the exit of a real `python -m workbench worksheet`, which imports numpy for the
compile-plan model (`check` no longer does: tests/cli/test_start_without_numpy.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_path

REPO = Path(__file__).resolve().parents[2]

REPORT_AT_EXIT = """
import atexit, ctypes, sys

def report():
    libs = {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()}
    for lib in sorted(libs):
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                     "openblas_get_num_threads"):
            function = getattr(ctypes.CDLL(lib), name, None)
            if function is not None:
                print("blas threads", function(), file=sys.stderr)
                return
    print("blas threads unknown", sorted(libs), file=sys.stderr)

atexit.register(report)
sys.argv = ["workbench", *sys.argv[1:]]
from workbench.entry import main
sys.exit(main())
"""


def blas_threads(chosen: str | None) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OPENBLAS_NUM_THREADS", None)
    if chosen is not None:
        env["OPENBLAS_NUM_THREADS"] = chosen
    example = str(example_path(DEFAULT_EXAMPLE))
    done = subprocess.run(
        [sys.executable, "-c", REPORT_AT_EXIT, "worksheet", example],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr.strip().splitlines()[-1]


TWO = str(min(2, os.cpu_count() or 1))  # OpenBLAS starts no more threads than cores


@pytest.mark.parametrize(("chosen", "expected"), [(None, "1"), ("2", TWO)])
def test_openblas_starts_with_one_thread_unless_the_user_chose(
    chosen: str | None, expected: str
) -> None:
    assert blas_threads(chosen) == f"blas threads {expected}"
