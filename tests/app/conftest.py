"""Fixtures for the app tests: an isolated home, a writable packet copy, an app factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_bytes
from packets.load import load_packet
from workbench.app import WorkbenchApp, WorkbenchOptions
from workbench.session import WorkingPacket, open_working
from workbench.steps import default_steps

SMALL, LARGE = (80, 24), (160, 48)
# Steps without the Packet step's long form: a lighter app for tests of keys, themes and
# dialogs (which the step list, being data, must support anyway).
LIGHT_STEPS = default_steps()[1:]


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


def working_for(path: Path) -> WorkingPacket:
    """A fresh WorkingPacket for the packet file at `path`."""
    return open_working(load_packet(path), path)


@pytest.fixture
def make_app(home: Path, packet_file: Path) -> Callable[..., WorkbenchApp]:
    """Build a WorkbenchApp on the packet copy, with drafts and keymap under `home`."""

    def make(path: Path | None = None, **options: object) -> WorkbenchApp:
        return WorkbenchApp(working_for(path or packet_file), WorkbenchOptions(**options))  # type: ignore[arg-type]

    return make
