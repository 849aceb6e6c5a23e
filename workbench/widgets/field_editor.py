"""Labelled editors for one packet field: text, choice, and the base the NumberField builds on.

An editor turns what the user types into a value with `form.parse_text` (bounds included) and
posts `FieldEditor.Edited`; text it cannot read is refused in place (`FieldEditor.Refused`, and
the reason under the field). The screen applies edits through the session and sets `problem`
when the whole-packet checks refuse one. Escape leaves the field; refused text is then put back
to the last accepted value.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from workbench.form import FieldSpec, TextRefused, format_value, parse_text


class FieldEditor(Widget):
    """Base editor: a label, the editing widget, a unit suffix and a one-line message."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "Leave field", id="leave-field", show=False),
    ]

    problem: reactive[str] = reactive("")
    """Why the current text was refused ('' when it was accepted)."""
    warning: reactive[str] = reactive("")
    """A packet warning about this field ('' when none)."""

    class Edited(Message):
        """The user entered a value the field itself accepts (the packet checks come next)."""

        def __init__(self, editor: FieldEditor, value: Any, text: str) -> None:
            super().__init__()
            self.editor, self.value, self.text = editor, value, text

    class Refused(Message):
        """The user entered text the field cannot read; `reason` is one line."""

        def __init__(self, editor: FieldEditor, text: str, reason: str) -> None:
            super().__init__()
            self.editor, self.text, self.reason = editor, text, reason

    def __init__(self, spec: FieldSpec, value: Any, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="field")
        self.spec = spec
        self.accepted = value
        """The last value the packet took for this field."""
        self._message_shown: str | None = None

    def compose(self) -> ComposeResult:
        yield Label(self.spec.short_label, classes="field-label")
        yield self.make_editor()
        yield Static(self.spec.unit, classes="field-unit")
        yield Static("", classes="field-message")

    def make_editor(self) -> Widget:
        """The widget that edits the value (an Input unless a subclass says otherwise)."""
        return Input(
            format_value(self.spec, self.accepted),
            placeholder="not set" if self.spec.optional else "",
            select_on_focus=False,
            compact=True,
        )

    @property
    def input(self) -> Input:
        """The Input the value is typed into."""
        return self.query_one(Input)

    def read(self, text: str) -> None:
        """Check `text` and post Edited or Refused."""
        try:
            value = parse_text(self.spec, text)
        except TextRefused as exc:
            self.problem = str(exc)
            self.post_message(self.Refused(self, text, str(exc)))
            return
        self.post_message(self.Edited(self, value, text))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.read(event.value)

    def show_value(self, value: Any, pending_text: str | None = None) -> None:
        """Show `value` (the packet's) or, when given, refused text still pending."""
        self.accepted = value
        text = pending_text if pending_text is not None else format_value(self.spec, value)
        editor = self.input
        if editor.value != text:
            with editor.prevent(Input.Changed):
                editor.value = text

    def action_leave(self) -> None:
        """Leave the field for the step list; refused text goes back to the accepted value."""
        if self.problem:
            self.show_value(self.accepted)
            self.problem = ""
            self.post_message(
                self.Edited(self, self.accepted, format_value(self.spec, self.accepted))
            )
        self.screen.action_focus_steps()  # type: ignore[attr-defined]

    def _update_message(self) -> None:
        text = self.problem or self.warning
        if text == self._message_shown:
            return
        self._message_shown = text
        message = self.query_one(".field-message", Static)
        message.update(text)
        message.display = bool(text)
        self.set_class(bool(self.problem), "-invalid")
        self.set_class(bool(self.warning) and not self.problem, "-warning")

    def watch_problem(self, _: str) -> None:
        if self.is_mounted:
            self._update_message()

    def watch_warning(self, _: str) -> None:
        if self.is_mounted:
            self._update_message()

    def on_mount(self) -> None:
        self._update_message()


class ChoiceField(FieldEditor):
    """A field with a fixed set of values (and true/false fields), picked from a list."""

    def make_editor(self) -> Widget:
        choices = self.spec.choices or ("true", "false")
        options = [(c, c) for c in choices]
        current = format_value(self.spec, self.accepted)
        return Select(
            options,
            value=current if current in choices else Select.BLANK,
            allow_blank=self.spec.optional,
            compact=True,
        )

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.read("" if event.value is Select.BLANK else str(event.value))

    def show_value(self, value: Any, pending_text: str | None = None) -> None:
        self.accepted = value
        select = self.query_one(Select)
        text = format_value(self.spec, value)
        wanted = text if text else Select.BLANK
        if select.value != wanted:
            with select.prevent(Select.Changed):
                select.value = wanted


def editor_for(spec: FieldSpec, value: Any, *, id: str | None = None) -> FieldEditor:
    """The editor widget that suits the field's kind."""
    if spec.kind in ("integer", "number"):
        from .number_field import NumberField

        return NumberField(spec, value, id=id)
    if spec.kind in ("choice", "bool"):
        return ChoiceField(spec, value, id=id)
    return FieldEditor(spec, value, id=id)
