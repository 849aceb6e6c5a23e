"""Fixtures for the app tests: an isolated home, a writable packet copy, an app factory."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.screen import Screen

from packets.examples import DEFAULT_EXAMPLE, example_bytes
from packets.load import load_packet
from workbench.app import WorkbenchApp, WorkbenchOptions
from workbench.core.session import WorkingPacket, open_working
from workbench.core.steps import import_screen
from workbench.screens.registry import default_steps

SMALL, LARGE = (80, 24), (160, 48)
# Steps without the Packet step's long form: a lighter app for tests of keys, themes and
# dialogs (which the step list, being data, must support anyway).
LIGHT_STEPS = default_steps()[1:]


@pytest.fixture(scope="session", autouse=True)
def step_screens_imported() -> None:
    """Every step's screen module imported, with what it imports on first use, as the app's
    start-up thread does (`WorkbenchApp._load_screens`): a step switch in a test then shows the
    step at once, whichever test ran first. The switch to a step not yet imported (shown once a
    thread has imported it) is tested with loaders of its own (test_step_switch.py)."""
    for step in default_steps():
        import_screen(step)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME with XDG state and config folders inside it (nothing leaks out)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return home


@pytest.fixture
def packet_file(tmp_path: Path) -> Path:
    """A writable copy of the default example packet."""
    path = tmp_path / "work" / "packet.yaml"
    path.parent.mkdir()
    path.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    return path


SERVING_EXAMPLE = "llm-serving-continuous"


@pytest.fixture
def serving_file(tmp_path: Path) -> Path:
    """A writable copy of the serving (continuous-batching) example."""
    path = tmp_path / "serving" / "packet.yaml"
    path.parent.mkdir()
    path.write_bytes(example_bytes(SERVING_EXAMPLE))
    return path


def step_key(app: WorkbenchApp, step: str) -> str:
    """The jump key of a step (its number in the step list)."""
    return str([s.id for s in app.steps].index(step) + 1)


def working_for(path: Path) -> WorkingPacket:
    """A fresh WorkingPacket for the packet file at `path`."""
    return open_working(load_packet(path), path)


@pytest.fixture
def make_app(home: Path, packet_file: Path) -> Callable[..., WorkbenchApp]:
    """Build a WorkbenchApp on the packet copy, with drafts and keymap under `home`."""

    def make(path: Path | None = None, **options: object) -> WorkbenchApp:
        return WorkbenchApp(working_for(path or packet_file), WorkbenchOptions(**options))  # type: ignore[arg-type]

    return make


SETTLE_TIMEOUT_S = 60.0  # a first numba compile on a fresh checkout takes ~6 s


async def settle(app: WorkbenchApp, pilot, timeout: float = SETTLE_TIMEOUT_S) -> None:  # type: ignore[no-untyped-def]
    """Wait until no worker runs (model runs, the start-up warm-up), no chart waits for its
    redraw and no form piece waits to mount, so what is on screen is final (fails after
    `timeout` seconds)."""
    from workbench.widgets.charts import Chart

    deadline = time.monotonic() + timeout
    await pilot.pause()  # keys already sent are handled (and start their workers) first
    while True:
        await pilot.pause(0.02)
        running = [w.name for w in app.workers if not w.is_finished and w.name != "stall-monitor"]
        pending = [c.id for c in app.screen.query(Chart) if c.pending]
        if getattr(app.screen, "mounting_later", False):  # form sections still to mount
            pending.append("mount_later")
        if not running and not pending:
            break
        assert time.monotonic() < deadline, f"still running after {timeout} s: {running + pending}"
    await pilot.pause()


def count_layouts(screen: Screen) -> list[int]:
    """A one-item list counting the screen's layouts (`_refresh_layout` calls) from now on."""
    calls = [0]
    through = screen._refresh_layout

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return through(*args, **kwargs)

    screen._refresh_layout = counted  # type: ignore[method-assign]
    return calls
