"""`update_in_place`: replace a Static's content without laying the screen out again when the
new content fits in the lines the Static has."""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import Static


def update_in_place(static: Static, content: VisualType) -> None:
    """Show `content` in `static`; a layout pass only when it needs more lines than it has.

    `Static.update` lays out the whole screen by default: on Tune at 120x40 (a serving packet's
    form, deck and status lines) each such pass took 20-30 ms of the UI thread, measured
    2026-12-01, twice an edit (the status line when the key lands, the serving line when the
    run does), and 50-80 ms when the status wrapped onto one more line (2026-12-02). Text that
    fits in the lines the widget has needs only its own repaint. Shorter text leaves the rest of
    them blank until the screen is next laid out for another reason: shrinking now would lay
    out the screen twice when the next edit grows it back (a change undone, then redone), and
    a reserved height (`min-height`) keeps the lines anyway. A widget never laid out (width 0:
    not yet shown) is sized by the layout that shows it."""
    width, height = static.content_size
    static.update(content, layout=False)
    if not width:
        return
    parent = static.parent
    container = parent.size if parent is not None else static.size
    if static.get_content_height(container, static.screen.size, width) > height:
        static.refresh(layout=True)
