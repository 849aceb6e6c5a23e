"""The step list on the left of every step screen: where you are and which steps are done."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.geometry import Size
from textual.reactive import Reactive, reactive
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

    virtual_size = Reactive(Size(0, 0), layout=False)
    """The list's scrollable size. OptionList counts its lines as it first draws and sets
    this then, and Textual's reactive asked for a layout of the whole screen (a second one
    after each first visit's first frame). The list's own size is fixed by the stylesheet
    (#step-list), so only its scrollbar depends on this, and OptionList updates that itself
    (`_scroll_update`, which lays out when a scrollbar shows or hides)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, compact=True)
        self._rows: tuple[StepRow, ...] = ()
        self._prompts: list[Text] = []  # what each option shows now

    def show(self, rows: Sequence[StepRow], current: str) -> None:
        """Show `rows` with `current` marked; rebuilds only when something changed."""
        rows = tuple(rows)
        if rows == self._rows and current == self.current:
            return
        same_steps = [r.id for r in rows] == [r.id for r in self._rows]
        self._rows = rows
        self.current = current
        prompts = [self._prompt(row) for row in rows]
        if same_steps and len(self._prompts) == len(prompts):
            # A mark changed: new prompts in place (a repaint of the list). Clearing and
            # adding the options resized the list, and a resize lays out the whole screen
            # again (~60 ms for the Packet form, after every edit that changes a mark).
            for index, (old, new) in enumerate(zip(self._prompts, prompts, strict=True)):
                if old != new:
                    self.replace_option_prompt_at_index(index, new)
        else:
            self.clear_options()
            self.add_options([Option(p, id=row.id) for p, row in zip(prompts, rows, strict=True)])
        self._prompts = prompts
        index = next((i for i, row in enumerate(rows) if row.id == current), None)
        self.highlighted = index

    def _prompt(self, row: StepRow) -> Text:
        mark = CURRENT_MARK if row.id == self.current else (DONE_MARK if row.done else TODO_MARK)
        text = Text(f"{mark} {row.number} {row.title}")
        if row.id == self.current:
            text.stylize("bold")
        return text
