"""A two-column table of packet facts (label, value) that wraps to the width it is given."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from workbench.core.facts import Fact


class FactTable(Static):
    """Shows facts as label/value rows; `show` replaces them."""

    def show(self, facts: Sequence[Fact]) -> None:
        """Render `facts` (labels in the first column, values wrapping in the second)."""
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for fact in facts:
            table.add_row(Text(fact.label), Text(fact.value))
        self.update(table)
