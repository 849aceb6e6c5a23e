"""The Tune step. The candidates in the packet and the knobs each one changes against the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from packets.schema import Packet
from workbench.facts import Fact, tune_facts

from .facts_screen import FactsScreen


class TuneScreen(FactsScreen):
    """The candidates in the packet and the knobs each one changes against the baseline."""

    def facts(self, packet: Packet) -> Sequence[Fact]:
        return tune_facts(packet)
