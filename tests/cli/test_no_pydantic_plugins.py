"""The `workbench` program validates packets with pydantic alone (workbench.entry).

A real (if tiny) pydantic plugin is installed into a scratch site folder: a dist-info whose
entry point registers it in the `pydantic` group. Importing the packet schema in a plain
interpreter loads it (so it is discoverable), and `python -m workbench` never does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from packets.examples import DEFAULT_EXAMPLE, example_path

REPO = Path(__file__).resolve().parents[2]

SPY = """
import os, pathlib
pathlib.Path(os.environ["SPY_MARK"]).write_text("loaded")


class Spy:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = Spy()
"""


def install_spy(site: Path) -> None:
    (site / "pydantic_spy.py").write_text(SPY)
    dist = site / "pydantic_spy-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pydantic-spy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[pydantic]\nspy = pydantic_spy:plugin\n")


def run(args: list[str], site: Path, mark: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
        "SPY_MARK": str(mark),
    }
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )


def test_an_installed_pydantic_plugin_never_sees_a_packet(tmp_path: Path) -> None:
    site, mark = tmp_path / "site", tmp_path / "loaded"
    site.mkdir()
    install_spy(site)

    plain = run(["-c", "import packets.load"], site, mark)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert mark.read_text() == "loaded"  # discoverable: pydantic itself loads it
    mark.unlink()

    checked = run(["-m", "workbench", "check", str(example_path(DEFAULT_EXAMPLE))], site, mark)
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert not mark.exists()
