"""The Textual app (a first shell: packet title and inputs; the full step flow comes later)."""

from __future__ import annotations

import json

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Static

from packets.load import LoadedPacket


class WorkbenchApp(App[None]):
    """Shows a packet's title and inputs; `q` quits."""

    TITLE = "handoff-workbench"
    BINDINGS = [Binding("q", "quit", "Quit", id="quit")]

    def __init__(self, loaded: LoadedPacket) -> None:
        super().__init__()
        self.loaded = loaded

    def compose(self) -> ComposeResult:
        packet = self.loaded.packet
        yield Header()
        yield Static(f"[b]{packet.title}[/b]\n{packet.topic} - {packet.anchor_metric}", id="title")
        inputs = packet.inputs.model_dump(mode="json", exclude_none=True)
        yield Static(json.dumps(inputs, indent=2), id="inputs", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.loaded.name
