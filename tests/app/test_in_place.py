"""update_in_place: a Static's new content repaints alone unless its height changed."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from workbench.widgets.in_place import update_in_place


class Counting(Screen):
    """Two auto-height lines of text; counts the screen's layout passes."""

    DEFAULT_CSS = "Static { height: auto; }"

    def __init__(self) -> None:
        super().__init__()
        self.layouts = 0

    def compose(self) -> ComposeResult:
        yield Static("one line of status", id="status")
        yield Static("below it", id="below")

    def _refresh_layout(self, size=None, scroll: bool = False) -> None:  # type: ignore[no-untyped-def]
        self.layouts += 1
        super()._refresh_layout(size, scroll)


class Lines(App[None]):
    def on_mount(self) -> None:
        self.push_screen(Counting())


async def test_same_height_text_repaints_without_a_layout_and_taller_text_lays_out() -> None:
    app = Lines()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, Counting)
        status, below = screen.query_one("#status", Static), screen.query_one("#below")
        before = screen.layouts
        update_in_place(status, "another line, same height")
        await pilot.pause()
        assert screen.layouts == before  # no layout pass ...
        assert "another line" in str(status.render())  # ... and the new text is shown
        assert below.region.y == 1
        update_in_place(status, "first line\nsecond line")
        await pilot.pause()
        assert screen.layouts > before  # two lines: laid out again, what follows moves
        assert status.size.height == 2 and below.region.y == 2
        status.update("one line\ntwo\nthree")  # Static.update: a layout pass every time
        await pilot.pause()
        laid_out = screen.layouts
        status.update("one line\ntwo\nthree!")
        await pilot.pause()
        assert screen.layouts > laid_out
