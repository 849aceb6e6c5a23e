"""Modal screens: the key help (generated from the bindings) and the draft-recovery question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from workbench.core.keys import KeyRow


class HelpScreen(ModalScreen[None]):
    """Every key the workbench binds, with the binding ids a keymap file can remap."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,question_mark,q", "dismiss", "Close help", id="close-help"),
    ]

    def __init__(self, rows: Sequence[KeyRow], keymap_file: str) -> None:
        super().__init__(id="help")
        self.rows = rows
        self.keymap_file = keymap_file

    def compose(self) -> ComposeResult:
        table = Table(expand=True, box=None, header_style="bold", pad_edge=False)
        table.add_column("Key", no_wrap=True)
        table.add_column("Action")
        table.add_column("Where", no_wrap=True)
        table.add_column("Id (keymap)", no_wrap=True)
        for row in self.rows:
            table.add_row(
                *(Text(cell) for cell in (row.keys, row.description, row.where, row.binding_id))
            )
        with Vertical(id="help-box"):
            yield Static("[b]Keys[/b]  (Esc closes)", classes="modal-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(table, id="help-table")
                yield Static(
                    f"Remap keys in {self.keymap_file}: one line per binding id, e.g.\n"
                    '  next-step = "ctrl+j"',
                    id="help-keymap",
                )

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(result)


PENDING_SHOWN = 8  # lines of each list the dialog shows before '... and N more'
TEXT_SHOWN = 60  # characters of a pending value shown (the draft keeps all of it)


def printable(text: str, limit: int = TEXT_SHOWN) -> str:
    """`text` safe to show on one line: control and other unprintable characters (a pasted
    escape sequence, a line break) shown as \\xNN / \\uNNNN escapes, cut to `limit`
    characters with an ellipsis. The dialog shows it as plain text, never as markup."""
    shown = "".join(
        ch
        if ch.isprintable()
        else (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        for ch in text
    )
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


@dataclass(frozen=True)
class DraftQuestion:
    """What the recovery dialog tells the user about a draft.

    Attributes:
        packet_path, draft_path: the packet file and its draft.
        changes: 'path: old -> new' per field the draft's packet changes.
        pending: (field path, text) for each field holding text not yet accepted.
        file_changed: the packet file changed since the draft's edits started.
    """

    packet_path: str
    draft_path: str
    changes: tuple[str, ...]
    pending: tuple[tuple[str, str], ...]
    file_changed: bool

    @property
    def refused_fields(self) -> tuple[str, ...]:
        """The fields holding text not yet accepted."""
        return tuple(path for path, _ in self.pending)

    def lines(self) -> list[str]:
        """The dialog's text, plain (no markup): readable 'path: value' lines."""
        lines = [f"Unsaved edits to {printable(self.packet_path, 200)} were kept in a draft:"]
        lines += _capped([f"  • {printable(c, 2 * TEXT_SHOWN)}" for c in self.changes])
        if self.pending:
            lines.append("Text not yet accepted:")
            lines += _capped(
                [f"  • {printable(path)}: {printable(text)}" for path, text in self.pending]
            )
        if self.file_changed:
            lines.append("The packet file has changed since the draft was made.")
        return lines


def _capped(lines: list[str]) -> list[str]:
    if len(lines) <= PENDING_SHOWN:
        return lines
    return [*lines[:PENDING_SHOWN], f"  … and {len(lines) - PENDING_SHOWN} more"]


class RecoverScreen(ModalScreen[str]):
    """Asks what to do with a draft left by an earlier session.

    Dismisses with 'recover' (continue the draft's edits), 'discard' (delete the draft) or
    'keep-both' (write the draft as a new file beside the packet, open the packet as it is).
    Escape means keep-both: the choice that loses nothing.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "choose('recover')", "Recover", id="draft-recover"),
        Binding("d", "choose('discard')", "Discard", id="draft-discard"),
        Binding("k,escape", "choose('keep-both')", "Keep both", id="draft-keep-both"),
    ]

    def __init__(self, question: DraftQuestion) -> None:
        super().__init__(id="recover")
        self.question = question

    def compose(self) -> ComposeResult:
        text = Text("\n".join(self.question.lines()))  # plain Text: nothing typed is markup
        text.highlight_words([printable(self.question.packet_path, 200)], "bold")
        text.highlight_words(["The packet file has changed since the draft was made."], "bold")
        with Vertical(id="recover-box"):
            yield Static("[b]Recover draft?[/b]", classes="modal-title")
            yield Static(text, id="recover-text")
            with Horizontal(id="recover-buttons"):
                yield Button("Recover (r)", id="recover", variant="primary", compact=True)
                yield Button("Discard (d)", id="discard", variant="error", compact=True)
                yield Button("Keep both (k)", id="keep-both", compact=True)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id or "keep-both")

    def action_choose(self, choice: str) -> None:
        """Close the dialog with `choice`."""
        self.dismiss(choice)


class SaveAsScreen(ModalScreen[str | None]):
    """Asks for the file to write a copy of the packet to; dismisses with the path typed
    (Enter) or None (Escape)."""

    DEFAULT_CSS = """
    SaveAsScreen {
        align: center middle;
    }
    #save-as-box {
        width: 90%;
        max-width: 100;
        height: auto;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    #save-as-path {
        margin-top: 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="save-as-cancel"),
    ]

    def __init__(self, reason: str, default: str) -> None:
        super().__init__(id="save-as")
        self.reason = reason
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="save-as-box"):
            yield Static(Text("Save a copy", style="bold"), classes="modal-title")
            yield Static(Text(self.reason))
            yield Input(self.default, placeholder="path/to/packet.yaml", id="save-as-path")
            yield Static(Text("Enter writes the copy and edits it from now on; Esc cancels."))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        """Close without saving."""
        self.dismiss(None)
