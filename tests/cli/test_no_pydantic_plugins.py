"""The `workbench` program validates packets with pydantic alone (workbench.entry).

A real (if tiny) pydantic plugin is installed into a scratch site folder: a dist-info whose
entry point registers it in the `pydantic` group. Importing the packet schema in a plain
interpreter loads it (so it is discoverable), and `python -m workbench` never does, nor imports what
finding it would need (pydantic's plugin loader is a stand-in that hands over to the real one
for anything but `get_plugins`).
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


LOAD_AND_LIST = """
import sys
import workbench.entry
workbench.entry.without_pydantic_plugins()
import workbench.cli
from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet
load_packet(example_path(DEFAULT_EXAMPLE))
print(sorted(name for name in sys.modules if name.startswith("importlib.metadata")))
"""


def test_the_program_does_not_import_the_plugin_scan(tmp_path: Path) -> None:
    """With plugins off, pydantic's plugin loader is a stand-in (workbench.entry.PluginsOff):
    loading a packet with every command imported never imports `importlib.metadata`, which
    only the entry point scan needs. A pydantic that finds plugins some other way fails here,
    and the stand-in (and its share of the start-up) should go."""
    site, mark = tmp_path / "site", tmp_path / "loaded"
    site.mkdir()
    install_spy(site)
    listed = run(["-c", LOAD_AND_LIST], site, mark)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert listed.stdout.strip() == "[]"
    assert not mark.exists()


HAND_OVER = """
import sys
import workbench.entry
workbench.entry.without_pydantic_plugins()
stand_in = sys.modules[workbench.entry.PYDANTIC_PLUGIN_LOADER]
from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP, get_plugins
loader = sys.modules[workbench.entry.PYDANTIC_PLUGIN_LOADER]
print(type(stand_in).__name__, type(loader).__name__, PYDANTIC_ENTRY_POINT_GROUP)
print(list(get_plugins()))
"""


def test_the_stand_in_hands_any_other_name_to_pydantics_own_loader(tmp_path: Path) -> None:
    site, mark = tmp_path / "site", tmp_path / "loaded"
    site.mkdir()
    install_spy(site)
    done = run(["-c", HAND_OVER], site, mark)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["PluginsOff module pydantic", "[]"]
    assert not mark.exists()  # pydantic's own loader, with plugins off, loads none either
