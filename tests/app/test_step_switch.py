"""Step switches right after start-up: what the UI defers (form pieces, start-up threads) waits
for the user, and focus stays in form order while the form is still mounting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Static

from workbench.app import WorkbenchApp
from workbench.core.form import input_fields
from workbench.core.quiet import UserQuiet
from workbench.core.steps import LazyScreen, Step, screen_class
from workbench.screens.packet import PacketScreen, editor_id
from workbench.widgets.field_editor import FieldEditor
from workbench.widgets.step_list import DONE_MARK, StepList, StepRow

from .conftest import LIGHT_STEPS, SMALL, settle

MakeApp = Callable[..., WorkbenchApp]


def test_a_thread_waits_for_the_user_to_pause() -> None:
    quiet = UserQuiet()
    quiet.touch()
    started = time.monotonic()
    assert quiet.wait(0.2)
    assert quiet.quiet_for() >= 0.2 and time.monotonic() - started >= 0.2
    quiet.busy()  # the UI's own deferred work counts for threads, not as the user's
    assert quiet.quiet_for() < 0.2 <= quiet.user_quiet_for()


def test_a_waiting_thread_goes_when_wanted_or_stops_when_the_app_closes() -> None:
    quiet, wanted = UserQuiet(), threading.Event()
    results: list[bool] = []
    waiter = threading.Thread(target=lambda: results.append(quiet.wait(60.0, until=wanted)))
    waiter.start()
    wanted.set()
    waiter.join(5.0)
    assert results == [True]
    closing = threading.Thread(target=lambda: results.append(quiet.wait(60.0)))
    closing.start()
    quiet.closed.set()
    closing.join(5.0)
    assert results == [True, False]


async def test_form_pieces_wait_while_their_step_is_off_screen(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        packet = app.screen
        assert isinstance(packet, PacketScreen)
        await pilot.press("ctrl+n")  # right after the first frame, as the tmux walk does
        await pilot.pause(0.6)
        assert app.current_step == "baseline"
        waiting = len(packet.query(FieldEditor))
        assert packet.mounting_later and waiting < len(input_fields())
        await pilot.pause(0.4)  # off screen: nothing more mounts however long it waits
        assert len(packet.query(FieldEditor)) == waiting
        await pilot.press("1")
        await settle(app, pilot)
        assert not packet.mounting_later
        assert len(packet.query(FieldEditor)) == len(input_fields())


async def test_tab_follows_the_form_order_while_it_mounts(make_app: MakeApp) -> None:
    """Tab from the step list past the first section's fields, with the keys faster than
    the pieces mount: focus lands on each field in form order (Textual orders the focus chain
    by layout position, where a widget not yet laid out sits first)."""
    app = make_app()
    specs = input_fields()
    first_section = sum(1 for s in specs if s.section == specs[0].section)
    async with app.run_test(size=SMALL) as pilot:
        packet = app.screen
        assert isinstance(packet, PacketScreen) and packet.mounting_later
        app.screen.query_one(StepList).focus()
        for index in range(first_section + 3):
            await pilot.press("tab")
            focused = packet.focused
            assert focused is not None
            editor = next(a for a in focused.ancestors if isinstance(a, FieldEditor))
            assert editor.id == editor_id(specs[index]), index
        await settle(app, pilot)


async def test_a_return_shows_at_once_and_a_first_visit_once_mounted(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        app.goto_step("baseline")  # first visit: frames wait for the screen to mount
        assert app._batch_count == 1
        await pilot.pause()
        assert app._batch_count == 0 and app.screen.is_mounted
        app.goto_step("packet")  # a return: its screen is built, nothing is held
        assert app._batch_count == 0


def test_a_changed_mark_updates_the_step_list_in_place() -> None:
    """The options stay (a repaint): clearing and adding them resized the list, which laid
    out the whole screen again after every edit that changed a mark."""
    step_list = StepList()
    rows = [StepRow("packet", 1, "Packet", False), StepRow("baseline", 2, "Baseline", False)]
    step_list.show(rows, "baseline")
    before = [step_list.get_option_at_index(i) for i in range(2)]
    step_list.show([StepRow("packet", 1, "Packet", True), rows[1]], "baseline")
    after = [step_list.get_option_at_index(i) for i in range(2)]
    assert [a is b for a, b in zip(before, after, strict=True)] == [True, True]
    assert str(after[0].prompt).startswith(DONE_MARK)


async def test_the_form_mounts_after_the_first_frame_and_checks_nothing(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Packet step's first frame holds the first section; the rest mount after that frame
    has gone out (not before it: a refresh's callbacks can run ahead of the render pass), in
    form order, and none of them checks the packet: an editor's Input reports its first
    text, the packet's own value, as it mounts."""
    at_first_frame: list[tuple[int, bool]] = []
    checked: list[tuple[str | int, ...]] = []
    display, check_edit = WorkbenchApp._display, WorkbenchApp.check_edit

    def watch_display(app: WorkbenchApp, screen, renderable) -> None:  # type: ignore[no-untyped-def]
        if renderable is not None and isinstance(screen, PacketScreen) and not at_first_frame:
            at_first_frame.append((len(screen.query(FieldEditor)), screen.mounting_later))
        display(app, screen, renderable)

    def watch_check(app: WorkbenchApp, path, value):  # type: ignore[no-untyped-def]
        checked.append(path)
        return check_edit(app, path, value)

    monkeypatch.setattr(WorkbenchApp, "_display", watch_display)
    monkeypatch.setattr(WorkbenchApp, "check_edit", watch_check)
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        specs = input_fields()
        first_section = sum(1 for s in specs if s.section == specs[0].section)
        assert at_first_frame == [(first_section, True)]
        editors = list(app.screen.query(FieldEditor))
        assert [e.id for e in editors] == [editor_id(s) for s in input_fields()]
        assert checked == []
        # Typing away from the packet's value checks it; typing back clears what it said.
        hidden = app.screen.query_one(f"#{editor_id(input_fields()[3])}", FieldEditor)
        hidden.input.focus()
        await pilot.press("end", "x")
        await pilot.pause()
        assert hidden.problem and app.working.pending
        await pilot.press("backspace")
        await pilot.pause()
        assert hidden.problem == "" and not app.working.pending


async def test_only_a_new_terminal_size_lays_the_screen_out_again(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual sends the terminal's first size after the first screen was laid out at it;
    that same size lays nothing out again, and a new size still does."""
    layouts: list[Size | None] = []
    refresh_layout = PacketScreen._refresh_layout

    def watch(screen: PacketScreen, size: Size | None = None, scroll: bool = False) -> None:
        layouts.append(size)
        refresh_layout(screen, size, scroll)

    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        monkeypatch.setattr(PacketScreen, "_refresh_layout", watch)
        form = app.screen.query_one("#form")
        width = form.size.width
        await pilot.resize_terminal(*SMALL)
        await pilot.pause(0.1)
        assert layouts == []
        await pilot.resize_terminal(SMALL[0] + 20, SMALL[1])
        await pilot.pause(0.1)
        assert Size(SMALL[0] + 20, SMALL[1]) in layouts
        assert form.size.width == width + 20


def gated_steps(release: threading.Event, threads: list[bool]) -> tuple[Step, ...]:
    """LIGHT_STEPS with the second step's screen behind a loader that has not run in this
    process: it records whether it ran on the UI thread and waits for `release` (an import
    the user is faster than)."""
    second = LIGHT_STEPS[1]

    def slow_import() -> type[Screen]:
        threads.append(threading.current_thread() is threading.main_thread())
        release.wait(10.0)
        cls = screen_class(second)
        assert cls is not None
        return cls

    return (LIGHT_STEPS[0], replace(second, screen=LazyScreen(slow_import)), *LIGHT_STEPS[2:])


async def test_a_step_not_imported_yet_shows_once_a_thread_has_imported_it(
    make_app: MakeApp,
) -> None:
    release, threads = threading.Event(), []
    steps = gated_steps(release, threads)
    app = make_app(steps=steps)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+n")  # the UI loop goes on while the import waits
        await pilot.pause(0.1)
        assert threads == [False]  # off the UI thread
        assert app.current_step == steps[0].id
        release.set()
        await settle(app, pilot)
        assert app.current_step == steps[1].id
        assert str(app.screen.query_one(".step-title", Static).content) == f"2 · {steps[1].title}"


async def test_a_later_key_wins_over_an_import_still_running(make_app: MakeApp) -> None:
    """ctrl+n twice: the first asks for a step still importing, the second counts from it and
    shows the step after it at once (imported already); the import's end changes nothing."""
    release, threads = threading.Event(), []
    steps = gated_steps(release, threads)
    app = make_app(steps=steps)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+n", "ctrl+n")
        await pilot.pause()
        assert app.current_step == steps[2].id
        release.set()
        await settle(app, pilot)
        assert app.current_step == steps[2].id
        assert threads and not any(threads)  # (the start-up import thread may run it too)
