"""The Diagnose step. The inputs behind each tail driver: arrivals and batching (queueing), placement and cores (imbalance), traffic outside compiled buckets (fallback)."""

from __future__ import annotations

from collections.abc import Sequence

from packets.schema import Packet
from workbench.facts import Fact, diagnose_facts

from .facts_screen import FactsScreen


class DiagnoseScreen(FactsScreen):
    """The inputs behind each tail driver: arrivals and batching (queueing), placement and cores (imbalance), traffic outside compiled buckets (fallback)."""

    def facts(self, packet: Packet) -> Sequence[Fact]:
        return diagnose_facts(packet)
