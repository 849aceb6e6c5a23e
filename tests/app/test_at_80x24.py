"""The app as a new user meets it at 80x24 (issue 12): a refused action leaves focus where it
was and says why in the status line, results of actions land there too, quitting asks while
something is unsaved, Escape puts back the accepted value, the Mapping report says when a
telemetry file is missing and is cleared when its inputs change, and the quick/full matrix
toggle says which matrix the form holds. Real app under run_test, driven by keys (Pilot)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from workbench.app import WorkbenchApp
from workbench.screens.confirm import ConfirmScreen
from workbench.widgets.field_editor import FieldEditor
from workbench.widgets.note import Note
from workbench.widgets.step_list import StepList

from .conftest import SMALL, settle

MakeApp = Callable[..., WorkbenchApp]


def status_line(app: WorkbenchApp) -> str:
    return app.screen.query_one("#status-line", Note).said


def note(app: WorkbenchApp, note_id: str) -> str:
    return app.screen.query_one(f"#{note_id}", Note).said


def editor(app: WorkbenchApp, editor_id: str) -> FieldEditor:
    return app.screen.query_one(f"#{editor_id}", FieldEditor)


async def goto(pilot, app: WorkbenchApp, number: int) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("escape", str(number))
    await settle(app, pilot)
    assert app.step_number(app.current_step) == number


async def test_a_refused_propose_keeps_focus_and_says_why_in_the_status_line(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 6)
        steps = app.screen.query_one(StepList)
        assert app.focused is steps
        await pilot.press("ctrl+r")  # no rationale: refused
        await settle(app, pilot)
        assert app.focused is steps  # focus stays: typing goes where the user put it
        assert "needs a written rationale" in status_line(app)
        assert status_line(app).startswith("✗")
        assert editor(app, "proposal-rationale").problem == "a proposal needs a written rationale"
        assert app.working.packet.outputs.mitigation is None


async def test_a_refused_export_lands_in_the_status_line(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 9)
        steps = app.screen.query_one(StepList)
        await pilot.press("ctrl+y")  # the default packet's guards still block
        await pilot.pause()
        # Said where the user looks (the form's own note is below the 24th row), focus kept.
        assert status_line(app).startswith("✗ export is disabled while guards block")
        assert note(app, "export-problem") in status_line(app)
        assert app.focused is steps
        status = app.screen.query_one("#status-line", Note)
        assert status.region.y + status.region.height <= SMALL[1] - 1  # above the footer


async def test_quit_asks_only_while_something_is_unsaved(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 4)
        fusion = editor(app, "tune-fusion")
        fusion.input.focus()
        await pilot.press("ctrl+u", *"standard", "enter")
        await settle(app, pilot)
        assert not app.working.dirty and not app.working.pending  # the packet is untouched
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and app.is_running
        assert "Tune working configuration" in app.screen.question
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running and "Not quit" in status_line(app)
        await pilot.press("f5")  # back to the baseline: nothing unsaved any more
        await settle(app, pilot)
        assert app.unsaved_work() == []
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


async def test_escape_after_a_bad_entry_restores_the_accepted_value(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 7)
        requests = editor(app, "matrix-requests")
        requests.input.focus()
        await pilot.press(*"4000", "enter")
        await pilot.pause()
        assert requests.accepted == 4000
        await pilot.press("ctrl+u")  # cleared while typing: an optional field reads None...
        await pilot.press(*"-5")  # ...then a bad entry
        await pilot.pause()
        assert requests.problem
        await pilot.press("escape")
        await pilot.pause()
        assert requests.text == "4000" and requests.accepted == 4000  # not the cleared text
        assert app.screen.form["requests"] == 4000  # type: ignore[attr-defined]
        assert not requests.problem


async def test_matrix_toggle_says_which_matrix_the_form_holds(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 7)
        assert note(app, "matrix-size").startswith("size: full default matrix")
        await pilot.press("ctrl+y")
        await pilot.pause()
        assert note(app, "matrix-size").startswith("size: quick matrix")
        assert "Quick matrix" in status_line(app)
        seeds = editor(app, "matrix-seeds")
        seeds.input.focus()
        await pilot.press("ctrl+u", "7", "enter")
        await pilot.pause()
        assert note(app, "matrix-size").startswith("size: custom matrix")


async def test_mapping_reports_a_missing_telemetry_file_and_clears_a_changed_report(
    make_app: MakeApp, tmp_path: Path
) -> None:
    from textual.widgets import Static

    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 5)
        await pilot.press("ctrl+y")  # no telemetry: the model alone
        await settle(app, pilot)
        report = app.screen.query_one("#report", Static)
        assert "reproduce with workbench report" in note(app, "report-status")
        assert str(report.render()).strip()
        missing = tmp_path / "missing-kernels.csv"
        telemetry = editor(app, "mapping-telemetry")
        telemetry.input.focus()
        await pilot.press(*str(missing), "enter")  # other inputs: the old report goes
        await pilot.pause()
        assert not str(report.render()).strip()
        assert note(app, "report-status").startswith("Cleared: ")
        await pilot.press("ctrl+y")
        await settle(app, pilot)
        assert "no such file" in status_line(app) and str(missing) in status_line(app)
        assert note(app, "report-status").startswith("No report: ")
        assert not str(report.render()).strip()
        assert app.screen.report is None  # type: ignore[attr-defined]
