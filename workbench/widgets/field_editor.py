"""Labelled editors for one packet field: text, choice, and the base the NumberField builds on.

An editor turns what the user types into a value with `form.parse_text` (bounds included).
Every keystroke is checked (`Edited` with commit=False, or `Refused` with the reason shown
under the field); Enter, leaving the field, an arrow step or a pick from a list commits
(`Edited` with commit=True). The screen checks edits against the whole packet and sets
`problem` when it refuses one. Escape leaves the field, putting back the last accepted value.

Each editor is one widget around its Input: the editor draws its label, unit and message lines
itself (`render`), in the columns the Input's margins leave free (app.tcss). Widgets are what a
form costs to build (each is registered, styled, composed, mounted and laid out): drawing these
here instead of a Label on either side of every Input, and a message widget mounted at the
first refusal, took 7% off the instructions of a warm start to the Packet step's first frame
(22 editors; 3.15 -> 2.92 billion, valgrind on benchmarks/bench_app.py's child).
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.style import Style
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Input
from textual.widgets.input import Selection

from workbench.core.form import FieldSpec, TextRefused, format_value, parse_text


class FieldInput(Input):
    """A field's text input, whose edits do not lay out the whole screen, and whose first text
    is set quietly.

    Textual's Input sets its virtual size (the text's width) on every change of its value, and
    the virtual size is a layout reactive: each key typed, or arrow step, that changed the
    text's length laid out every widget on the screen (11-20 ms on the Tune screen at 120x40
    on a slow host, before the edit's message was even handled). A field's input has a fixed
    size (`.field Input` in app.tcss), so all that pass changes for it is its scroll limits:
    updated here directly (`_scroll_update`, what the pass would call), without the pass.

    Given its first text as `value`, an Input runs its value watcher as it is built: it
    validates the text, posts a Changed that nobody typed, and (with a suggester) starts a
    worker to look up a completion, for every field of a form. Here that text is set as the
    watcher would leave it (virtual size, cursor at the end) and nothing else happens until
    the user changes it: 2% of the instructions of a warm start (22 editors).
    """

    def __init__(self, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.set_reactive(Input.value, text)
        self.set_reactive(Input.selection, Selection.cursor(len(text)))
        self._initial_value = False  # the cursor is placed: later values keep it where it is
        self.set_reactive(Widget.virtual_size, Size(self.content_width, 1))

    _value_changing = False

    def _watch_value(self, value: str) -> None:
        self._value_changing = True
        try:
            super()._watch_value(value)
        finally:
            self._value_changing = False

    def refresh(self, *regions, repaint=True, layout=False, recompose=False):  # type: ignore[no-untyped-def]
        if layout and self._value_changing and not self.styles.auto_dimensions:
            layout = False
            self._scroll_update(self.virtual_size)
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def update_node_styles(self, animate: bool = True) -> None:
        """Restyle on a class change, except before the Input is in the DOM.

        Input's constructor sets a class (`-textual-compact`; given its first text as `value`,
        it also validates it and sets `-valid`), and with an app running each one restyled the
        new, unattached Input: the whole stylesheet matched against it and its five component
        classes, ~1.5 ms a class on a slow host, 60 ms over the Packet step's first 22 editors
        before the first frame. Textual applies the stylesheet to every widget as it registers
        it (`App._register`), after these classes are set, so skipping them changes no style.
        """
        if self._parent is None:
            return
        super().update_node_styles(animate)


class FieldEditor(Widget):
    """Base editor: a label, an Input, a unit suffix, and a message line when needed.

    The label fills the column left of the Input (its left margin) and wraps there, never cut;
    the unit sits right of it (its right margin, one cell of gap first); the message lines
    (why the text was refused, else a packet warning) run under both, indented two cells.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"field--unit"}
    """The unit's colour (app.tcss: `$text-muted`, which depends on the background). The label
    takes the editor's own colour (`.field`); the styles below are theme colours, set here and
    not as component classes: each component class is styled once per editor (three were 2% of
    a warm start's instructions), and these need no background to resolve."""
    FOCUSED_LABEL_STYLE: ClassVar[str] = "bold reverse $primary"
    """The focused field's label: reversed and bold, so focus shows under NO_COLOR too."""
    MESSAGE_STYLE: ClassVar[str] = "$error"
    """Why the text was refused."""
    WARNING_STYLE: ClassVar[str] = "$warning"
    """A packet warning about the field (shown when nothing is refused)."""
    MESSAGE_INDENT = 2
    """Cells before each message line."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "Leave", id="leave-field"),
    ]

    hides_text: ClassVar[bool] = False
    """True for a field whose characters are shown as dots (`PasswordField`)."""

    problem: reactive[str] = reactive("")
    """Why the current text was refused ('' when it was accepted)."""
    warning: reactive[str] = reactive("")
    """A packet warning about this field ('' when none)."""

    class Edited(Message):
        """Text the field itself accepts (the packet checks come next); `commit` is True when
        the user confirmed it (Enter, leaving the field, a step, a pick) and False while typing."""

        def __init__(self, editor: FieldEditor, value: Any, text: str, commit: bool) -> None:
            super().__init__()
            self.editor, self.value, self.text, self.commit = editor, value, text, commit

    class Mounted(Message):
        """The editor is on screen (lazily mounted editors may have missed edits)."""

        def __init__(self, editor: FieldEditor) -> None:
            super().__init__()
            self.editor = editor

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
        self._message_rows = 0  # the message's lines at the last layout
        # (text, width, lines) per slot: label, unit, message
        self._wrap_cache: list[tuple[str, int, list[Content]] | None] = [None, None, None]
        self._start_text = format_value(spec, value)  # the input's text once it is composed
        self._input: Input | None = None  # built by compose; in use once attached

    def compose(self) -> ComposeResult:
        self._input = FieldInput(
            self._start_text,
            placeholder=self.placeholder(),
            select_on_focus=False,
            compact=True,
            suggester=self.suggester(),
            password=self.hides_text,
        )
        yield self._input

    def placeholder(self) -> str:
        """Shown in an empty field."""
        return "not set" if self.spec.optional else ""

    def suggester(self) -> SuggestFromList | None:
        """Completions offered while typing (None: none)."""
        return None

    @property
    def input(self) -> Input:
        """The Input the value is typed into (NoMatches before the editor has composed)."""
        editor = self._composed_input()
        if editor is None:
            raise NoMatches(f"{self!r} has not composed its Input yet")
        return editor

    def _composed_input(self) -> Input | None:
        """The Input, or None while the editor waits to compose (a form piece mounting: a
        save or a recovered draft can update every editor of the form meanwhile). Kept, not
        queried: a packet change asks every editor of the Packet form two or three times (a
        DOM query each: ~25 ms of a commit there)."""
        editor = self._input
        return editor if editor is not None and editor.is_attached else None

    @property
    def text(self) -> str:
        """What the field shows now (before it has composed: what it will show)."""
        editor = self._composed_input()
        return editor.value if editor is not None else self._start_text

    @property
    def unapplied(self) -> bool:
        """True when the text on screen is not the packet's value."""
        try:
            return parse_text(self.spec, self.text) != self.accepted
        except TextRefused:
            return True

    def read(self, text: str, *, commit: bool) -> None:
        """Check `text` and post Edited or Refused.

        While typing (commit=False) only the text the field shows now is read: keys that
        arrive in one burst (a paste, keys bunched over SSH) change the Input several times
        before the first Changed is handled, and a copy of older text (a Changed already
        overtaken, pending text the screen echoes back) must not overwrite what the field
        holds. The newest text always has its own Changed still to come, so nothing is lost.
        A commit reads the text confirmed (Enter before more keys applies what it confirmed).
        """
        if not commit and text != self.text:
            return
        try:
            value = parse_text(self.spec, text)
        except TextRefused as exc:
            self.problem = str(exc)
            self.post_message(self.Refused(self, text, str(exc)))
            return
        self.post_message(self.Edited(self, value, text, commit))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()  # only ever the user's typing: FieldInput sets its first text quietly
        self.read(event.value, commit=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.read(event.value, commit=True)

    def on_descendant_focus(self) -> None:
        # The label shows focus (`render` asks `has_focus_within`): a repaint. A CSS class for
        # it restyled the editor, its Input and their component classes against the whole
        # stylesheet, twice per Tab (the field left, the field entered): 11 of the 52 ms a Tab
        # took on the Packet form at 80x24 (UI-thread CPU, median, on a slow host).
        self.refresh()

    def on_descendant_blur(self) -> None:
        self.refresh()
        if self.unapplied:
            self.read(self.text, commit=True)

    def show_value(self, value: Any, pending_text: str | None = None) -> None:
        """Show `value` (the packet's) or, when given, text typed but not applied yet. Text
        that already reads as `value` is left as typed ('60.50' stays, not '60.5')."""
        self.accepted = value
        if pending_text is None and not self.unapplied:
            return
        editor = self._composed_input()
        if pending_text is not None and editor is not None and editor.has_focus:
            # Text pending for the field being typed in is a copy of an earlier keystroke's
            # text: the Input already holds it, or newer keys (showing the copy lost them).
            return
        self.set_text(pending_text if pending_text is not None else format_value(self.spec, value))

    def set_text(self, text: str) -> None:
        """Replace the text without treating it as typing."""
        editor = self._composed_input()
        if editor is None:  # not composed yet: it will start with this text
            self._start_text = text
            return
        if editor.value != text:
            with editor.prevent(Input.Changed):
                editor.value = text
                editor.cursor_position = len(text)

    def action_leave(self) -> None:
        """Leave the field for the step list, putting back the accepted value."""
        if self.unapplied:
            text = format_value(self.spec, self.accepted)
            self.set_text(text)
            self.problem = ""
            self.post_message(self.Edited(self, self.accepted, text, True))
        self.screen.action_focus_steps()  # type: ignore[attr-defined]

    @property
    def message(self) -> str:
        """The line under the field: why it was refused, else a packet warning, else ''."""
        return self.problem or self.warning

    def _columns(self) -> tuple[int, int]:
        """(label, unit) column widths, cells: the Input's left and right margins."""
        if self._input is None:
            return 0, 0
        margin = self._input.styles.margin
        return margin.left, margin.right

    def _label_lines(self) -> list[Content]:
        """The label wrapped to its column, one cell of gap kept before the Input ([] when
        there is no column)."""
        label_width = self._columns()[0]
        if label_width < 2:
            return []
        return self._wrapped(0, self.spec.short_label or self.spec.label, label_width - 1)

    def _unit_lines(self) -> list[Content]:
        """The unit wrapped to its column, one cell of gap kept after the Input ([] when the
        field has no unit or no column)."""
        unit_width = self._columns()[1]
        if not self.spec.unit or unit_width < 2:
            return []
        return self._wrapped(1, self.spec.unit, unit_width - 1)

    def _wrapped(self, slot: int, text: str, width: int) -> list[Content]:
        """`text` wrapped to `width` cells (never cut), kept per text and width in `slot`:
        every layout of a form asks each editor its height, and a message is wrapped for the
        height, the repaint and the check of whether its row count changed."""
        width = max(width, 1)
        kept = self._wrap_cache[slot]
        if kept is None or kept[:2] != (text, width):
            content = Content(text)
            lines = [content] if content.cell_length <= width else content.wrap(width)
            kept = self._wrap_cache[slot] = (text, width, lines or [Content("")])
        return kept[2]

    def _message_lines(self, width: int) -> list[Content]:
        """The message wrapped under the field, indent included ([] when none)."""
        if not self.message:
            return []
        style = self.WARNING_STYLE if self.warning and not self.problem else self.MESSAGE_STYLE
        indent = " " * self.MESSAGE_INDENT
        lines = self._wrapped(2, self.message, width - self.MESSAGE_INDENT)
        return [Content.assemble(indent, line.stylize(style)) for line in lines]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """The Input's row, or the label's or unit's lines when taller, then the message."""
        rows = max(
            super().get_content_height(container, viewport, width),
            len(self._label_lines()),
            len(self._unit_lines()),
        )
        self._message_rows = len(self._message_lines(width))
        return rows + self._message_rows

    def render(self) -> Content:
        """Label, unit and message around the Input (which is drawn over the middle)."""
        label_width, unit_width = self._columns()
        label, unit = self._label_lines(), self._unit_lines()
        label_style = self.FOCUSED_LABEL_STYLE if self.has_focus_within else ""
        gap = Content(" " * max(self.size.width - label_width - unit_width, 0))
        unit_style = (
            Style.from_rich_style(self.get_component_rich_style("field--unit")) if unit else None
        )
        rows = []
        for row in range(max(1, len(label), len(unit))):  # the message goes under the Input too
            if label_width < 2:  # no label column
                line = Content(" " * label_width)
            else:
                left = label[row] if row < len(label) else Content("")
                line = left.pad_right(label_width - 1 - left.cell_length)
                line = (line.stylize(label_style) if label_style else line) + " "
            if row < len(unit):
                line = Content.assemble(line, gap, " ", unit[row].stylize(unit_style))
            rows.append(line)
        rows += self._message_lines(self.size.width)
        return Content("\n").join(rows)

    def _update_message(self) -> None:
        for name, wanted in (("-invalid", bool(self.problem)), ("-warning", bool(self.warning))):
            if self.has_class(name) != wanted:  # set_class restyles even when nothing changes
                self.set_class(wanted, name)
        # A message of as many lines as the last one's repaints in place; any other lays out.
        rows = len(self._message_lines(self.size.width)) if self.size.width else 0
        self.refresh(layout=rows != self._message_rows)

    def watch_problem(self, _: str) -> None:
        if self.is_mounted:
            self._update_message()

    def watch_warning(self, _: str) -> None:
        if self.is_mounted:
            self._update_message()

    def on_mount(self) -> None:
        if self.message:
            self._update_message()
        self.post_message(self.Mounted(self))


class ChoiceField(FieldEditor):
    """A field with a fixed set of values (true/false for flags): type one (completions are
    offered) or cycle through them with up/down."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cycle(-1)", "Previous choice", id="choice-previous"),
        Binding("down", "cycle(1)", "Next choice", id="choice-next"),
    ]

    @property
    def choices(self) -> tuple[str, ...]:
        """The values this field may take."""
        return self.spec.choices or ("true", "false")

    def placeholder(self) -> str:
        return " | ".join(self.choices)

    def suggester(self) -> SuggestFromList:
        return SuggestFromList(self.choices, case_sensitive=True)

    def action_cycle(self, offset: int) -> None:
        """Show and apply the next (or previous) choice."""
        choices = self.choices
        current = self.text if self.text in choices else format_value(self.spec, self.accepted)
        index = choices.index(current) + offset if current in choices else 0
        text = choices[index % len(choices)]
        self.set_text(text)
        self.read(text, commit=True)
