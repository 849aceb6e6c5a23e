"""Same packet and seed, same bytes, whatever the BLAS/OpenMP/numba thread count (issue 10.12).

OpenBLAS wakes a second thread for dot products over more than 10,000 elements and then sums in
another order, so any np.dot / @ / matmul on float arrays changes last digits with the thread
count (/work/shared/NOTES.md). Each case runs the real command line in a fresh interpreter
with the thread counts pinned by environment, once at 1 and once at 2, and compares bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_names

REPO = Path(__file__).resolve().parents[2]
THREAD_VARS = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "MKL_NUM_THREADS",
    "POLARS_MAX_THREADS",
)

# Runs in a fresh interpreter: `run --json` of every shipped example, then the default example
# through propose -> validate (quick, with the packet's 20,000 requests per cell: enough batches
# for BLAS to thread) -> recommend, each output to its own file in the working folder (relative
# paths: the reproducing command each output records names the packet as given).
DRIVER = """
import contextlib, io, sys
from pathlib import Path
from packets.examples import example_bytes, example_names
from workbench.cli import main

out = Path(".")
for name in example_names():
    packet = out / f"{name}.yaml"
    packet.write_bytes(example_bytes(name))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["run", str(packet), "--json"]) == 0
    (out / f"{name}.run.json").write_text(buf.getvalue())
packet = out / "reviewed.yaml"
packet.write_bytes(example_bytes(sys.argv[1]))
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["propose", str(packet), "--candidate", "standard-fusion", "--rationale",
                 "Fold the elementwise ops into their producers."]) == 0
    assert main(["validate", str(packet), "--quick", "--requests", "20000"]) == 0
    assert main(["recommend", str(packet)]) == 0
"""


def run_with_threads(threads: int, folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`python ARGS` in `folder` with every thread-count variable at `threads`."""
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, **dict.fromkeys(THREAD_VARS, str(threads)), "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=folder, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    folders = {}
    for threads in (1, 2):
        folder = tmp_path_factory.mktemp(f"threads{threads}")
        done = run_with_threads(threads, folder, "-c", DRIVER, DEFAULT_EXAMPLE)
        assert done.returncode == 0, done.stderr[-3000:]
        folders[threads] = folder
    return folders


@pytest.mark.parametrize("name", example_names())
def test_run_json_is_byte_identical_across_thread_counts(
    name: str, outputs: dict[int, Path]
) -> None:
    one, two = ((outputs[t] / f"{name}.run.json").read_bytes() for t in (1, 2))
    assert one.startswith(b"{") and len(one) > 1000
    assert one == two


def test_packet_outputs_are_byte_identical_across_thread_counts(
    outputs: dict[int, Path],
) -> None:
    """classification, mitigation, validation matrix, triggers and release, as written."""
    one, two = ((outputs[t] / "reviewed.yaml").read_bytes() for t in (1, 2))
    assert b"validation_matrix:" in one and b"release:" in one
    assert one == two


def test_verify_reproduce_passes_at_another_thread_count(outputs: dict[int, Path]) -> None:
    done = run_with_threads(
        2, outputs[1], "-m", "workbench", "verify", "reviewed.yaml", "--reproduce"
    )
    assert "outputs reproduced exactly" in done.stdout, done.stdout + done.stderr
