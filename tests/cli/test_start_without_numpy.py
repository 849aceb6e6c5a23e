"""`workbench open` paints its first frame without importing numpy.

Checking a packet needs the model's rules (hardware, block, fusion groups, tiles, a pinned
service distribution), and those live in numpy-free modules (`model.compiler.blocks`, `tiles`,
`fusion`, `hardware`, `model.runtime.inputs`, `serving_rules`); numpy, the model's arrays and
the lab load after the first frame, in threads. numpy was a fifth of a warm start (about 50 of
600 ms on the 2-core machine, BENCHMARKS.md). Every example's check without numpy is
tests/cli/test_lazy_commands.py's; this is the app's part, on the harness `bench_app` times.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.bench_app import CHILD, env

# Ahead of every other finder: numpy is refused, and who asked is written to stderr (an
# ImportError someone catches would otherwise go unseen). bench_app's child then starts as
# `workbench open` does and ends at the first frame ("frame-only"): threads the frame starts
# may import numpy, and are not run.
REFUSE_NUMPY = """
import sys, traceback
from pathlib import Path


class RefuseNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            ours = [f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.lineno}"
                    for f in traceback.extract_stack()[:-1] if "/site-packages/" not in f.filename
                    and "<frozen" not in f.filename]
            print("numpy asked for by", ours[-6:], file=sys.stderr, flush=True)
            raise ImportError("numpy is refused before the first frame")


sys.meta_path.insert(0, RefuseNumpy())
"""


def test_the_app_paints_its_first_frame_without_numpy(tmp_path: Path) -> None:
    argv = [str(tmp_path / "drafts"), "cli", "frame-only"]
    done = subprocess.run(
        [sys.executable, "-P", "-c", REFUSE_NUMPY + CHILD, *argv],
        capture_output=True,
        text=True,
        env=env(tmp_path),
        timeout=120,
    )
    asked = [line for line in done.stderr.splitlines() if line.startswith("numpy asked for")]
    assert asked == [], asked
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "READY"
