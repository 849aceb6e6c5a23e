"""The Baseline step. The baseline configuration, the load and the SLA it is judged under."""

from __future__ import annotations

from collections.abc import Sequence

from packets.schema import Packet
from workbench.facts import Fact, baseline_facts

from .facts_screen import FactsScreen


class BaselineScreen(FactsScreen):
    """The baseline configuration, the load and the SLA it is judged under."""

    def facts(self, packet: Packet) -> Sequence[Fact]:
        return baseline_facts(packet)
