"""update_in_place: a Static's new content repaints alone unless its height changed."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widget import Widget
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


def parts(app: Lines) -> tuple[Counting, Static, Widget]:
    """The counting screen, its status line and the widget below it."""
    screen = app.screen
    assert isinstance(screen, Counting)
    return screen, screen.query_one("#status", Static), screen.query_one("#below")


async def test_same_height_text_repaints_without_a_layout_and_taller_text_lays_out() -> None:
    app = Lines()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        screen, status, below = parts(app)
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


async def test_shorter_text_and_text_within_a_reserved_height_lay_nothing_out() -> None:
    """Text that needs fewer lines than the widget has repaints alone (the rest blank until
    the next layout), and so does text that grows into lines a min-height keeps (Tune's status
    at wide sizes): only growing past the lines the widget has lays the screen out."""
    app = Lines()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        screen, status, below = parts(app)
        update_in_place(status, "first line\nsecond line")
        await pilot.pause()
        laid_out = screen.layouts
        update_in_place(status, "one line again")
        await pilot.pause()
        assert screen.layouts == laid_out  # shorter: no layout ...
        assert "one line again" in str(status.render())  # ... the new text shown
        assert status.size.height == 2 and below.region.y == 2  # its second line kept, blank
        status.styles.min_height = 3
        await pilot.pause()
        laid_out = screen.layouts
        update_in_place(status, "one\ntwo\nthree")  # into the reserved line
        await pilot.pause()
        assert screen.layouts == laid_out
        assert status.size.height == 3 and below.region.y == 3
        update_in_place(status, "one\ntwo\nthree\nfour")  # past it
        await pilot.pause()
        assert screen.layouts > laid_out
        assert status.size.height == 4 and below.region.y == 4
