"""The Mapping step. Where each runtime shape runs: its compiled bucket and padding, or the fallback path."""

from __future__ import annotations

from collections.abc import Sequence

from packets.schema import Packet
from workbench.facts import Fact, mapping_facts

from .facts_screen import FactsScreen


class MappingScreen(FactsScreen):
    """Where each runtime shape runs: its compiled bucket and padding, or the fallback path."""

    def facts(self, packet: Packet) -> Sequence[Fact]:
        return mapping_facts(packet)
