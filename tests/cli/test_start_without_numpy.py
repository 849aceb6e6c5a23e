"""`workbench open` paints its first frame without importing numpy.

Checking a packet needs the model's rules (hardware, block, fusion groups, tiles, a pinned
service distribution), and those live in numpy-free modules (`model.compiler.blocks`, `tiles`,
`fusion`, `hardware`, `model.runtime.inputs`); numpy, the model's arrays and the lab load after
the first frame, in a thread. numpy was a fifth of a warm start (about 50 of 600 ms on the
2-core machine, BENCHMARKS.md). A module on that path that imports numpy at its top fails here,
with the chain of imports that reached it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from packets.examples import example_names

REPO = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: a finder ahead of every other refuses numpy and reports who asked,
# each example is checked as `workbench open` checks it, and the app runs to its first frame.
CHILD = """
import json, sys, traceback
from pathlib import Path

asked = []


class RefuseNumpy:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            ours = [f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.lineno}"
                    for f in traceback.extract_stack()[:-1] if "/site-packages/" not in f.filename
                    and "<frozen" not in f.filename]
            asked.append(ours[-6:])
            raise ImportError("numpy is refused before the first frame")


sys.meta_path.insert(0, RefuseNumpy())
import workbench.cli  # what `workbench open` imports before the app: every command module
from packets.load import load_packet
from packets.examples import example_path
from workbench.app import WorkbenchApp, WorkbenchOptions
from workbench.core.session import open_working
from workbench.screens.base import StepScreen

names = sys.argv[2:]
for name in names:
    load_packet(example_path(name))
frames = []


class FirstFrame(WorkbenchApp):
    def _display(self, screen, renderable):
        super()._display(screen, renderable)
        if renderable is not None and isinstance(screen, StepScreen) and not frames:
            frames.append(list(asked))  # a thread started after this frame may ask later
            self.exit()


path = example_path(names[0])
FirstFrame(open_working(load_packet(path), Path(path)),
           WorkbenchOptions(drafts_folder=Path(sys.argv[1]))).run(headless=True, size=(80, 24))
print(json.dumps({"frames": frames}))
"""


def test_checking_every_example_and_the_first_frame_need_no_numpy(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    done = subprocess.run(
        [sys.executable, "-P", "-c", CHILD, str(tmp_path / "drafts"), *example_names()],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["frames"], "the app painted no step screen"
    assert report["frames"][0] == [], f"numpy was imported by: {report['frames'][0]}"
