"""ChartDeck: several views (charts, tables) in one place, one shown at a time.

A line of view names marks the one on screen; the screen's keys call `step(+1/-1)`. Only the
shown view is laid out and drawn, so a chart that is not on screen costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.message import Message
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Static


class ChartDeck(Widget):
    """Views by id, with their names; `current` is the id on screen."""

    DEFAULT_CSS = """
    ChartDeck {
        height: 1fr;
    }
    ChartDeck > .deck-tabs {
        height: 1;
        color: $text-muted;
    }
    ChartDeck > ContentSwitcher {
        height: 1fr;
    }
    """

    class Switched(Message):
        """The view on screen changed to `view`."""

        def __init__(self, deck: ChartDeck, view: str) -> None:
            super().__init__()
            self.deck, self.view = deck, view

    def __init__(
        self, views: Sequence[tuple[str, str, Widget]], hint: str, *, id: str | None = None
    ) -> None:
        """`views`: (id, name, widget) in order, each widget's id being its view id; `hint`:
        the keys that switch views, e.g. 'f2/f3'."""
        super().__init__(id=id)
        for view_id, _, widget in views:
            if widget.id != view_id:
                raise ValueError(f"view '{view_id}' holds a widget with id {widget.id!r}")
        self._views = list(views)
        self._hint = hint
        self.current = self._views[0][0]

    @property
    def ids(self) -> list[str]:
        """View ids in order."""
        return [view_id for view_id, _, _ in self._views]

    def compose(self) -> ComposeResult:
        yield Static(self._tabs(), classes="deck-tabs")
        with ContentSwitcher(initial=self.current):
            for _, _, widget in self._views:
                yield widget

    def _tabs(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for view_id, name, _ in self._views:
            style = "bold reverse" if view_id == self.current else ""
            text.append(f" {name} ", style=style)
            text.append(" ")
        text.append(f"({self._hint})", style="dim")
        return text

    def show_view(self, view_id: str) -> None:
        """Put view `view_id` on screen."""
        if view_id == self.current or view_id not in self.ids:
            return
        self.current = view_id
        self.query_one(ContentSwitcher).current = view_id
        self.query_one(".deck-tabs", Static).update(self._tabs())
        self.post_message(self.Switched(self, view_id))

    def step(self, offset: int) -> None:
        """Show the view `offset` places after the current one (wrapping around)."""
        ids = self.ids
        self.show_view(ids[(ids.index(self.current) + offset) % len(ids)])
