"""The one busy line of off-thread work (workbench/screens/compute.py WorkScreen)."""

from __future__ import annotations

from collections.abc import Callable

from workbench.app import WorkbenchApp
from workbench.screens.compute import WorkScreen
from workbench.widgets.note import Note

from .conftest import SMALL, settle, step_key

MakeApp = Callable[..., WorkbenchApp]


async def test_a_busy_timer_whose_callback_lands_after_the_work_ended_shows_nothing(
    make_app: MakeApp,
) -> None:
    """Under load the busy timer can fire as the work ends, its callback queued behind the
    worker's cleanup; it must not put back a busy line that nothing clears (a stale
    "⟳ Running ..." seen on the Mapping step). Here the late callback is delivered by hand,
    after the work finished, with the ticket it was armed for."""
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press(step_key(app, "baseline"))
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, WorkScreen)
        shown: list[int] = []
        screen.start_compute("probe work", lambda _stop: 7, shown.append, channel="probe")
        await settle(app, pilot)
        assert shown == [7]
        note = screen.query_one(f"#{screen.BUSY_NOTE}", Note)
        ticket = screen._tickets["probe"]  # the ticket the timer was armed with
        screen._set_busy("probe", ticket, "probe work")  # its callback, arriving late
        await pilot.pause()
        assert "Probe work" not in note.said
        # While work is still running the same callback does show it.
        screen.start_compute("slow probe", lambda stop: stop.wait(5), shown.append, channel="probe")
        running = screen._tickets["probe"]
        screen._set_busy("probe", running, "slow probe")
        await pilot.pause()
        assert "Slow probe" in note.said
        screen.stop_compute("probe")
        await settle(app, pilot)
        assert "Slow probe" not in note.said
