"""LayoutOnceScreen: a Screen that does not lay itself out again for what one layout answered.

Textual lays a screen out when a widget asks (`refresh(layout=True)`), once that widget is idle.
On a step's first visit two layouts of the whole screen ran back to back, the second for
requests the first had already answered (25-60 ms of the UI loop after each first visit's first
frame on a slow host, just when the next key may come):
- requests made before the layout began: the widgets were still busy mounting, so theirs
  reached the screen after it (Textual sends a widget's request from its idle handler);
- requests the layout made itself: as it sizes each widget it sets the widget's virtual size,
  a reactive that asks for a layout (Textual's own scroll path sets it without).
A layout that a scrollbar showing or hiding asks for is kept: the widget's content area (or
its scrollbar's place) changed. Nor is the screen laid out again when the terminal reports the
size it was just laid out at (`_screen_resized`).

Nor does one layout arrange the screen twice (`FullMapCompositor`): Textual's compositor builds
the map of every widget in a full layout yet keeps the flag saying that map is out of date (set
by a scroll, or by an update to a widget off screen), and the first widget the same layout
sizes asks for its region, which arranges the whole screen again.
"""

from __future__ import annotations

from textual import messages
from textual._compositor import Compositor, ReflowResult
from textual._time import get_time
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget


class FullMapCompositor(Compositor):
    """A Compositor that arranges the whole screen only when its map of every widget is out
    of date: after a scroll, or when a widget it has not placed is to be drawn.

    Textual 8.2.8's compositor marks that map out of date (`_full_map_invalidated`) more often
    than it is, and the next geometry query arranges every widget again:
    - `reflow`, a full layout, builds the map yet leaves the mark as it was, so the first
      widget the same layout sizes (through `Widget.size`, for each resized scrollable widget:
      every Input of a form is one) arranged the screen a second time, for the same map;
    - `update_widgets`, a repaint, marks it for any widget drawn that is not on screen, as if
      it were new, so the repaint arranged the screen again to draw the ones that are.
    The Packet form's return from another step arranged the screen 8 times in 4 layouts (131
    of 225 ms of its UI-thread time, profiled): `show_packet` updates every editor, most of
    them below the fold. A widget that changes size or place asks for a layout, which
    rebuilds the map; a repaint moves nothing."""

    def reflow(self, parent: Widget, size: Size) -> ReflowResult:
        result = super().reflow(parent, size)
        self._full_map_invalidated = False  # `_full_map` is what `full_map` would build now
        return result

    def update_widgets(self, widgets: set[Widget]) -> None:
        placed = not self._full_map_invalidated and widgets <= self._full_map.keys()
        super().update_widgets(widgets)
        if placed:  # every widget drawn has its place in the map already
            self._full_map_invalidated = False


class LayoutOnceScreen(Screen):
    """A Screen whose full layout answers every request made before it began or by it,
    arranges its widgets once (`FullMapCompositor`), and that a terminal size it is laid out
    at already does not lay out again."""

    def __init__(
        self, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = FullMapCompositor()

    _laid_out_from = float("-inf")
    """When the last full layout began (Textual's message clock, `textual._time`)."""

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        if scroll and not self._layout_widgets:
            super()._refresh_layout(size, scroll)  # only what scrolling exposed: no reflow
            return
        scrollbars = {}
        for widget in self.walk_children(Widget, with_self=True):
            if not widget._is_mounted:
                continue  # still mounting: what it asks for once mounted is sent after this
            if widget._layout_required:  # not sent yet: send it now (Textual's own path,
                widget._check_refresh()  # ancestors' caches cleared), for this layout to answer
            if widget.is_scrollable:  # only these show scrollbars (Widget._refresh_scrollbars)
                scrollbars[widget] = (
                    widget.show_vertical_scrollbar,
                    widget.show_horizontal_scrollbar,
                )
        self._laid_out_from = get_time()  # the requests just sent are dropped (`_on_layout`)
        super()._refresh_layout(size, scroll)
        # What it sized (a virtual size is set only there): the DOM's widgets it placed and
        # the scrollbars it placed for them.
        for widget, _ in self._compositor.layers:
            if not widget._is_mounted:
                continue
            if widget._layout_required and scrollbars.get(widget, (False, False)) == (
                widget.show_vertical_scrollbar,
                widget.show_horizontal_scrollbar,
            ):
                widget._layout_required = False  # only its virtual size was set

    async def _on_layout(self, message: messages.Layout) -> None:
        if message.time <= self._laid_out_from:  # sent before the last full layout began
            message.stop()
            message.prevent_default()  # Textual's handler, next in the MRO, would lay out

    def _screen_resized(self, size: Size) -> None:
        """Lay the screen out for a new terminal size, only. The terminal's first size reaches
        the first screen after its first show has laid it out at that very size, and Textual
        laid the whole screen out again (40-75 ms of the Packet step's start-up here); a step
        switch calls this too, and a return laid its screen out even when nothing had changed.
        A layout something asked for meanwhile is not lost: the screen keeps it pending while
        off screen and runs it, once, on its first update when shown."""
        if size != self._compositor.size:
            super()._screen_resized(size)
