"""The step screens' header: Textual's, whose title line never lays the screen out.

Textual's Header shows the title with `Static.update`, which lays the whole screen out. The
app's sub-title changes as the packet does: "● unsaved" on the first committed edit, "N not
applied" while a field holds refused text. On the Packet step at 80x24 each such change cost a
full layout of the form (~60 ms of the UI loop on the 2-core machine) on top of the edit. The
title's size never depends on its text (a one-row header, the title 100% wide, cut with an
ellipsis), so new text needs only a repaint.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.visual import VisualType
from textual.widgets import Header as TextualHeader
from textual.widgets._header import HeaderTitle as TextualHeaderTitle


class HeaderTitle(TextualHeaderTitle):
    """Textual's header title, repainted (not laid out again) when its text changes."""

    def update(self, content: VisualType = "", *, layout: bool = False) -> None:
        super().update(content, layout=layout)


class Header(TextualHeader):
    """Textual's Header with a `HeaderTitle` whose updates lay nothing out."""

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            yield HeaderTitle() if type(widget) is TextualHeaderTitle else widget
