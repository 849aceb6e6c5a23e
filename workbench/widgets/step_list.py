"""The step list on the left of every step screen: where you are and which steps are done."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import OptionList
from textual.widgets.option_list import Option

DONE_MARK, CURRENT_MARK, TODO_MARK = "✓", "›", " "


@dataclass(frozen=True)
class StepRow:
    """What the list shows for one step."""

    id: str
    number: int
    title: str
    done: bool


class StepList(OptionList):
    """Lists the steps; up/down move, enter opens one (the screen handles OptionSelected)."""

    current: reactive[str] = reactive("")
    """Id of the step on screen."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, compact=True)
        self._rows: tuple[StepRow, ...] = ()

    def show(self, rows: Sequence[StepRow], current: str) -> None:
        """Show `rows` with `current` marked; rebuilds only when something changed."""
        rows = tuple(rows)
        if rows == self._rows and current == self.current:
            return
        self._rows = rows
        self.current = current
        self.clear_options()
        self.add_options([Option(self._prompt(row), id=row.id) for row in rows])
        index = next((i for i, row in enumerate(rows) if row.id == current), None)
        self.highlighted = index

    def _prompt(self, row: StepRow) -> Text:
        mark = CURRENT_MARK if row.id == self.current else (DONE_MARK if row.done else TODO_MARK)
        text = Text(f"{mark} {row.number} {row.title}")
        if row.id == self.current:
            text.stylize("bold")
        return text
