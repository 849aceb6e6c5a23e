"""FactsScreen: a step screen whose content is a table of packet facts."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import VerticalScroll

from packets.schema import Packet
from workbench.core.facts import Fact
from workbench.core.session import WorkingPacket
from workbench.widgets.fact_table import FactTable

from .base import StepScreen


class FactsScreen(StepScreen):
    """Shows `facts(packet)` under the step heading; subclasses define `facts`."""

    def facts(self, packet: Packet) -> Sequence[Fact]:
        """The rows to show for `packet`."""
        raise NotImplementedError

    def compose_main(self) -> ComposeResult:
        with VerticalScroll(classes="facts", can_focus=False):
            yield FactTable(id="facts")

    def show_packet(self, working: WorkingPacket) -> None:
        self.query_one(FactTable).show(self.facts(working.packet))
