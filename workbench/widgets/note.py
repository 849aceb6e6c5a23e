"""Note: a line of plain text that is hidden when empty and only re-laid out when it changes."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class Note(Static):
    """Plain (never markup) text; `say` updates it. Updating a Static always triggers a layout
    pass over the screen, so unchanged text is skipped: it keeps typing cheap in long forms."""

    def __init__(self, text: str | Text = "", *, id: str | None = None, classes: str = "") -> None:
        super().__init__(text, id=id, classes=classes, markup=False)
        self._said: str | Text = text
        self.display = bool(text)

    @property
    def said(self) -> str:
        """The text shown now ('' while hidden)."""
        return str(self._said)

    def say(self, text: str | Text) -> None:
        """Show `text` ('' hides the note)."""
        if text == self._said:
            return
        self._said = text
        self.update(text)
        self.display = bool(text)
