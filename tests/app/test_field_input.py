"""A field's Input starts with its text set quietly (workbench.widgets.field_editor.FieldInput):
no Changed nobody typed, no completion worker, yet the cursor, scrolling and completions work
as for text typed."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Input

from workbench.core.form import FieldSpec
from workbench.widgets.field_editor import ChoiceField, FieldEditor

CHOICE = FieldSpec(("form", "t", "mode"), "mode", "choice", choices=("poisson", "gamma"))
TEXT = FieldSpec(("form", "t", "note"), "note", "text")
LONG = "a fairly long note " * 6  # wider than the field at 60 columns


class Counted(FieldEditor):
    """Logs every Input.Changed the editor handles."""

    def on_input_changed(self, event: Input.Changed) -> None:
        self.app.changed.append(event.value)  # type: ignore[attr-defined]
        super().on_input_changed(event)


class CountedChoice(ChoiceField, Counted):
    pass


class Fields(App[None]):
    CSS = ".field Input { width: 1fr; margin: 0 2 0 8; } .field { height: auto; }"

    def __init__(self) -> None:
        super().__init__()
        self.changed: list[str] = []
        self.edits: list[Any] = []

    def compose(self) -> ComposeResult:
        yield CountedChoice(CHOICE, "poisson", id="mode")
        yield Counted(TEXT, LONG, id="note")

    def on_field_editor_edited(self, event: FieldEditor.Edited) -> None:
        self.edits.append(event.value)


async def test_first_text_is_set_without_a_change_or_a_worker() -> None:
    app = Fields()
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        mode, note = app.query_one("#mode", ChoiceField), app.query_one("#note", FieldEditor)
        assert (mode.input.value, note.input.value) == ("poisson", LONG)
        assert app.changed == [] and app.edits == [] and not list(app.workers)
        # As if typed: the cursor at the end, the scroll limits those of the text.
        assert note.input.cursor_position == len(LONG)
        assert note.input.virtual_size.width == len(LONG) + 1
        note.input.focus()
        await pilot.press("home", "end")
        assert (
            note.input.scroll_x == note.input.max_scroll_x == len(LONG) + 1 - note.input.size.width
        )
        # The first key is the first change; completions still come.
        mode.input.focus()
        mode.set_text("")
        await pilot.press("g")
        await pilot.pause()
        assert app.changed == ["g"] and mode.input._suggestion == "gamma"
