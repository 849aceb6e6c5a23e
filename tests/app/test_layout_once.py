"""A screen is not laid out again for what its last layout answered (LayoutOnceScreen): a
step's first visit laid its whole screen out twice in a row. Nor does one layout arrange the
widgets twice (a full layout after a scroll did). What is on screen is what a full layout
pass gives, and a scrollbar that shows or hides still gets its layout."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import OptionList, Static

from workbench.screens.layout import LayoutOnceScreen
from workbench.widgets.step_list import StepList, StepRow

from .conftest import count_layouts, settle

SIZE = (60, 16)
ROWS = 6


class Showing(App):
    """Shows `screen` (Textual's Screen or LayoutOnceScreen, same content)."""

    CSS = "VerticalScroll { height: 1fr; scrollbar-size-vertical: 1; }"

    def __init__(self, screen: Screen) -> None:
        super().__init__()
        self.shown = screen

    def on_mount(self) -> None:
        self.push_screen(self.shown)


def lines_screen(base: type[Screen], rows: int = ROWS) -> Screen:
    class Lines(base):  # type: ignore[misc, valid-type]
        def compose(self) -> ComposeResult:
            with VerticalScroll():
                yield from (Static(f"line {i}", id=f"line-{i}") for i in range(rows))

    return Lines()


Change = Callable[[Screen, Pilot], object]


async def layouts_for(base: type[Screen], change: Change, rows: int = ROWS) -> tuple[int, str]:
    """Full layouts `change` led to on a settled screen, and the screen after them."""
    app = Showing(lines_screen(base, rows))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        layouts = count_layouts(app.screen)
        await change(app.screen, pilot)
        await settle(app, pilot)
        shot = app.export_screenshot(title="shot")
        count = layouts[0]
        app.screen._refresh_layout()  # a full layout now changes nothing on screen
        await settle(app, pilot)
        assert app.export_screenshot(title="shot") == shot
    return count, shot


def text_grown_then_laid_out(sent: bool) -> Change:
    """Two rows of text in every line (each asks for a layout: it grows), then a layout that
    began after the requests, which were sent to the screen already (`sent`: what a widget's
    idle handler does) or are still pending in the widgets (the layout must not reuse the
    places it had cached before they grew)."""

    async def change(screen: Screen, pilot: Pilot) -> None:
        for index, line in enumerate(screen.query(Static)):
            line.update(f"line {index}\nits second row")
            if sent:
                line._check_refresh()
        screen._refresh_layout()

    return change


async def terminal_resized(screen: Screen, pilot: Pilot) -> None:
    """A new terminal size: every widget is sized anew (its virtual size set)."""
    await pilot.resize_terminal(SIZE[0] - 10, SIZE[1])


@pytest.mark.parametrize(
    "change",
    [text_grown_then_laid_out(sent=True), text_grown_then_laid_out(sent=False), terminal_resized],
    ids=["requests-sent-before-it", "requests-pending-before-it", "virtual-sizes-it-set"],
)
async def test_one_layout_answers_what_was_asked_before_it_and_by_it(change: Change) -> None:
    textual_count, textual_shot = await layouts_for(Screen, change)
    count, shot = await layouts_for(LayoutOnceScreen, change)
    assert count == 1 < textual_count  # Textual's own screen laid out again
    assert shot == textual_shot  # the same screen on the terminal


async def test_a_scrollbar_that_shows_still_lays_the_screen_out() -> None:
    async def shorter(screen: Screen, pilot: Pilot) -> None:
        await pilot.resize_terminal(SIZE[0], ROWS - 2)  # the lines no longer fit
        assert screen.query_one(VerticalScroll).show_vertical_scrollbar

    textual_count, textual_shot = await layouts_for(Screen, shorter)
    count, shot = await layouts_for(LayoutOnceScreen, shorter)
    assert count == 2 < textual_count  # the new size, then the scrollbar's place
    assert shot == textual_shot


async def test_the_terminal_size_laid_out_already_lays_nothing_out() -> None:
    async def same_size(screen: Screen, pilot: Pilot) -> None:
        await pilot.resize_terminal(*SIZE)

    assert (await layouts_for(Screen, same_size))[0] >= 1
    assert (await layouts_for(LayoutOnceScreen, same_size))[0] == 0


async def arrangements_for_lines_grown(base: type[Screen]) -> tuple[list[int], str]:
    """How many times the screen's widgets were arranged for each of three lines that grew a
    row, one at a time, the lines below the view first (an update to a widget off screen marks
    the compositor's map of every widget out of date), and the screen after them."""
    rows = 3 * SIZE[1]
    app = Showing(lines_screen(base, rows))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        screen = app.screen
        arranged = [0]
        arrange = screen._compositor._arrange_root

        def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
            arranged[0] += 1
            return arrange(*args, **kwargs)

        screen._compositor._arrange_root = counted  # type: ignore[method-assign]
        counts = []
        for row in (rows - 1, rows - 2, 0):
            arranged[0] = 0
            screen.query_one(f"#line-{row}", Static).update(f"line {row}\nits second row")
            await settle(app, pilot)
            counts.append(arranged[0])
        return counts, app.export_screenshot(title="shot")


async def test_a_full_layout_arranges_the_screen_once() -> None:
    """The compositor's map of every widget, built by a full layout, is the one the layout's
    own geometry queries and the repaints after it use: Textual arranged the whole screen
    again for the first widget the layout sized, and again to repaint the lines below the
    view, as if they were new (FullMapCompositor)."""
    textual_counts, textual_shot = await arrangements_for_lines_grown(Screen)
    counts, shot = await arrangements_for_lines_grown(LayoutOnceScreen)
    assert counts == [1, 1, 1]
    assert all(count > 1 for count in textual_counts)  # Textual 8.2.8 arranged it again
    assert shot == textual_shot


STEPS = [StepRow(f"s{i}", i, f"Step {i}", False) for i in range(1, 9)]


def list_screen(list_class: type[OptionList]) -> Screen:
    class Listed(Screen):
        CSS = "OptionList { width: 20; height: 100%; }"

        def compose(self) -> ComposeResult:
            yield list_class(id="steps")

    return Listed()


async def listed_layouts(list_class: type[OptionList], height: int) -> tuple[int, OptionList]:
    """Full layouts of the screen after the list is first filled and drawn."""
    app = Showing(list_screen(list_class))
    async with app.run_test(size=(SIZE[0], height)) as pilot:
        await settle(app, pilot)
        layouts = count_layouts(app.screen)
        listed = app.screen.query_one("#steps", OptionList)
        if isinstance(listed, StepList):
            listed.show(STEPS, "s1")
        else:
            listed.add_options([row.title for row in STEPS])
        await settle(app, pilot)
        return layouts[0], listed


async def test_the_step_list_counting_its_lines_lays_nothing_out_but_its_scrollbar() -> None:
    """OptionList counts its lines as it draws and sets its virtual size then, which laid the
    screen out again; the step list's size is fixed, so only its scrollbar depends on it."""
    textual_count, _ = await listed_layouts(OptionList, SIZE[1])
    count, steps = await listed_layouts(StepList, SIZE[1])
    assert count == textual_count - 1
    assert steps.virtual_size.height == len(STEPS) and not steps.show_vertical_scrollbar
    _, short = await listed_layouts(StepList, 5)  # 5 rows for 8 steps: it scrolls
    assert short.show_vertical_scrollbar and short.max_scroll_y == len(STEPS) - 5
