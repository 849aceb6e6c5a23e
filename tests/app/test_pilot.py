"""The app driven by keys through Textual's Pilot, at 80x24 and at a large size."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Input, Static

from packets.dump import dump_packet
from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet
from workbench.app import DRAFT_DELAY_S, WorkbenchApp
from workbench.core import drafts
from workbench.core.session import WorkingPacket, apply_edit, set_pending
from workbench.core.theming import NO_COLOR, register_plot_theme
from workbench.screens.confirm import ConfirmScreen
from workbench.screens.modals import HelpScreen, RecoverScreen, SaveAsScreen
from workbench.widgets.field_editor import FieldEditor
from workbench.widgets.step_list import StepList

from .conftest import LARGE, LIGHT_STEPS, SETTLE_TIMEOUT_S, SMALL, settle, working_for

MakeApp = Callable[..., WorkbenchApp]
STEP_TITLES = ["1 · Packet", "2 · Baseline", "3 · Diagnose", "4 · Tune", "5 · Mapping"]
STEP_TITLES += ["6 · Proposal", "7 · Validation", "8 · Release", "9 · Review"]


def title(app: WorkbenchApp) -> str:
    return str(app.screen.query_one(".step-title", Static).content)


def field_selector(label: str) -> str:
    return f"#field-{label.replace('.', '-')}"


def editor(app: WorkbenchApp, label: str) -> FieldEditor:
    return app.screen.query_one(field_selector(label), FieldEditor)


def record_notes(app: WorkbenchApp) -> list[tuple[str, str]]:
    notes: list[tuple[str, str]] = []
    real = app.notify

    def notify(message: str, **kwargs: object) -> None:
        notes.append((message, str(kwargs.get("severity", "information"))))
        real(message, **kwargs)  # type: ignore[arg-type]

    app.notify = notify  # type: ignore[method-assign]
    return notes


def status_line(app: WorkbenchApp) -> str:
    """What the status line of the step on screen says ('' when nothing)."""
    from workbench.widgets.note import Note

    return app.screen.query_one("#status-line", Note).said


async def focus_field(app: WorkbenchApp, pilot, label: str) -> FieldEditor:  # type: ignore[no-untyped-def]
    """Focus the field's input, once its form section has mounted (`mount_later`)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while not app.screen.query(field_selector(label)) and time.monotonic() < deadline:
        await pilot.pause(0.02)
    field = editor(app, label)
    field.input.focus()
    await pilot.pause()
    return field


async def retype(pilot, text: str, *, enter: bool = True) -> None:  # type: ignore[no-untyped-def]
    """Replace a field's text key by key, then (by default) press Enter to apply it."""
    await pilot.press("end", "ctrl+u", *text, *(["enter"] if enter else []))
    await pilot.pause()


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
async def test_walk_every_step_by_keys(make_app: MakeApp, size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        seen = [title(app)]
        for _ in range(len(STEP_TITLES) - 1):
            await pilot.press("ctrl+n")
            await pilot.pause()
            seen.append(title(app))
        assert seen == STEP_TITLES
        await pilot.press("ctrl+n")  # already at the last step: stays
        await pilot.pause()
        assert app.current_step == "review"
        await settle(app, pilot)  # Baseline and Diagnose are done once the baseline has run
        rows = app.step_rows()
        # The review steps are done only when their outputs are there and current.
        assert [r.done for r in rows] == [True] * 5 + [False] * 4
        step_list = app.screen.query_one(StepList)
        assert step_list.highlighted == 8
        await pilot.press("ctrl+o", "ctrl+o")
        await pilot.pause()
        assert title(app) == "7 · Validation"
        await pilot.press("1")  # digit jumps work outside fields
        await pilot.pause()
        assert title(app) == "1 · Packet"
        await focus_field(app, pilot, "sla.p95_ms")
        await pilot.press("2")  # in a field a digit is typed, not a jump...
        assert app.current_step == "packet"
        await pilot.press("escape", "down", "down", "down", "enter")  # ...Escape: step list
        await pilot.pause()
        assert title(app) == "4 · Tune"
        assert app.working.pending == {}  # Escape put the field's value back


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "160x48"])
async def test_edits_apply_or_are_refused_in_place(
    make_app: MakeApp, home: Path, size: tuple[int, int]
) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        field = await focus_field(app, pilot, "sla.p95_ms")
        await retype(pilot, "75", enter=False)  # checked while typing, applied on Enter
        assert app.working.packet.inputs.sla.p95_ms == 62.5
        assert app.working.pending == {"inputs.sla.p95_ms": "75"}
        await pilot.press("enter")
        assert app.working.packet.inputs.sla.p95_ms == 75.0 and app.working.pending == {}
        assert app.working.dirty and field.problem == "" and "● unsaved" in app.sub_title
        await pilot.pause(DRAFT_DELAY_S + 0.1)  # autosaved once typing pauses, off the UI loop
        assert app.wait_for_drafts(10)
        draft = drafts.read_draft(app.working.source, app.drafts_folder)  # type: ignore[arg-type]
        assert isinstance(draft, drafts.Draft)
        assert draft.working.packet.inputs.sla.p95_ms == 75.0
        assert app.drafts_folder == home / "state" / "handoff-workbench" / "drafts"
        await retype(pilot, "62.5")
        assert not app.working.dirty
        await retype(pilot, "-5")
        assert app.working.packet.inputs.sla.p95_ms == 62.5
        assert field.problem == "must be at least 0.001, got -5.0"
        await pilot.pause()  # the field grows a row for the message
        under = [field.render_line(y).text.strip() for y in range(1, field.size.height)]
        assert field.size.height == 2 and under == [field.problem]
        assert field.has_class("-invalid")
        assert app.working.pending == {"inputs.sla.p95_ms": "-5"}
        await retype(pilot, "100")  # fine alone, but above the p99 target
        assert "p99 target 76.0 ms is below the p95 target 100.0 ms" in field.problem
        assert app.working.packet.inputs.sla.p95_ms == 62.5
        await pilot.pause()  # a longer message: wrapped, every word still shown
        under = [field.render_line(y).text.strip() for y in range(1, field.size.height)]
        assert " ".join(under) == field.problem and field.size.height == 1 + len(under)
        await retype(pilot, "6O")  # a letter O: not a number
        assert field.problem.startswith("expected a number")
        await pilot.press("escape")  # leaving puts the accepted value back
        await pilot.pause()
        assert field.input.value == "62.5" and field.problem == ""
        assert app.working.pending == {}
        assert isinstance(app.focused, StepList)
        assert field.size.height == 1  # the message's rows are gone


async def test_number_field_steps_with_arrows_and_refuses_out_of_bounds(
    make_app: MakeApp,
) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await focus_field(app, pilot, "workload.arrivals.rate_per_s")
        await pilot.press("up")
        await pilot.pause()
        assert app.working.packet.inputs.workload.arrivals.rate_per_s == 260.0
        await pilot.press("shift+down", "down")
        await pilot.pause()
        assert app.working.packet.inputs.workload.arrivals.rate_per_s == 150.0
        field = await focus_field(app, pilot, "hardware.clock_scale")  # empty, [0.05, 2]
        await pilot.press("up")
        await pilot.pause()
        assert app.working.packet.inputs.hardware.clock_scale == 0.05  # the lowest accepted
        await pilot.press("shift+up", "shift+up")
        await pilot.pause()
        assert app.working.packet.inputs.hardware.clock_scale == 1.05
        assert field.problem == "must be at most 2, got 2.05: not stepped"


async def test_choice_edit_is_checked_across_fields(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        process = editor(app, "workload.arrivals.process")
        process.read("gamma", commit=True)  # what picking 'gamma' in the list posts
        await pilot.pause()
        assert (
            process.problem
            == "inputs.workload.arrivals.cv: required for process gamma (inter-arrival CV)"
        )
        assert app.working.packet.inputs.workload.arrivals.process == "poisson"


async def test_warnings_show_at_their_field(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        await focus_field(app, pilot, "workload.requests")
        await retype(pilot, "500")
        field = editor(app, "workload.requests")
        assert field.has_class("-warning") and "p99 rests on fewer than" in field.warning
        summary = app.screen.query_one("#packet-warnings", Static)
        assert summary.display and "inputs.workload.requests" in str(summary.content)


async def test_question_mark_types_in_a_field_and_f1_opens_help(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        field = await focus_field(app, pilot, "metadata.power_mode")
        await pilot.press("end", "question_mark")
        await pilot.pause()
        assert field.input.value == "nominal?"
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        ids = {row.binding_id for row in app.screen.rows}
        assert {"next-step", "previous-step", "save", "help", "quit", "number-up"} <= ids
        assert {"goto-packet", "goto-mapping", "draft-recover", "leave-field"} <= ids
        assert all(row.binding_id for row in app.screen.rows)  # every binding has an id
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_keymap_file_remaps_keys(make_app: MakeApp, home: Path) -> None:
    keymap = home / "config" / "handoff-workbench" / "keymap.toml"
    keymap.parent.mkdir(parents=True)
    keymap.write_text('next-step = "f8"\n')
    app = make_app(steps=LIGHT_STEPS)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.current_step == "baseline"
        await pilot.press("f8")
        await pilot.pause()
        assert app.current_step == "diagnose"
        rows = {row.binding_id: row.keys for row in app.help_rows()}
        assert rows["next-step"] == "f8"


async def test_bad_keymap_file_warns_and_the_app_runs(make_app: MakeApp, home: Path) -> None:
    keymap = home / "config" / "handoff-workbench" / "keymap.toml"
    keymap.parent.mkdir(parents=True)
    keymap.write_text("next-step = [\n")
    app = make_app(steps=LIGHT_STEPS)
    notes = record_notes(app)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert any("not valid TOML" in m and s == "warning" for m, s in notes)
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.current_step == "diagnose"  # default keys still work


async def test_missing_theme_falls_back_with_a_warning(make_app: MakeApp) -> None:
    app = make_app(theme="textual-ansi", steps=LIGHT_STEPS)
    notes = record_notes(app)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert app.theme == "workbench-dark"
        assert any("theme 'textual-ansi' not found" in m for m, _ in notes)
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme == "workbench-high-contrast"


async def test_palette_offers_actions_steps_and_themes(make_app: MakeApp) -> None:
    app = make_app(steps=LIGHT_STEPS)
    async with app.run_test(size=LARGE) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.palette_commands(app.screen)]
        assert {"Next", "Back", "Save", "Help", "Quit"} <= set(titles)
        assert "Go to step 4: Mapping" in titles and "Theme: workbench-light" in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert CommandPalette.is_open(app)
        await pilot.press(*"step 3")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.current_step == "tune"
        await pilot.press("ctrl+p", *"light")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == "workbench-light"


async def test_save_writes_canonical_bytes_and_clears_the_draft(
    make_app: MakeApp, packet_file: Path
) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await focus_field(app, pilot, "sla.p99_ms")
        await retype(pilot, "95")
        draft = drafts.draft_path(packet_file, app.drafts_folder)
        await pilot.pause(DRAFT_DELAY_S + 0.1)
        assert app.wait_for_drafts(10) and draft.exists()
        await pilot.press("ctrl+s")
        await pilot.pause()
        saved = load_packet(packet_file).packet
        assert saved.inputs.sla.p99_ms == 95.0
        assert packet_file.read_bytes() == dump_packet(saved)
        assert not app.working.dirty and not draft.exists()


async def test_save_refuses_a_changed_file_once(make_app: MakeApp, packet_file: Path) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await focus_field(app, pilot, "sla.p99_ms")
        await retype(pilot, "95")
        packet_file.write_bytes(packet_file.read_bytes() + b"# edited elsewhere\n")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert b"# edited elsewhere" in packet_file.read_bytes()
        assert "changed on disk" in status_line(app)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert load_packet(packet_file).packet.inputs.sla.p99_ms == 95.0


async def test_save_confirms_the_version_it_overwrites(
    make_app: MakeApp, packet_file: Path
) -> None:
    """A second ctrl+s overwrites the changed file it warned about, not a newer one."""
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await focus_field(app, pilot, "sla.p99_ms")
        await retype(pilot, "95")
        packet_file.write_bytes(packet_file.read_bytes() + b"# edited elsewhere\n")
        await pilot.press("ctrl+s")
        await pilot.pause()
        packet_file.write_bytes(packet_file.read_bytes() + b"# and edited again\n")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert b"# and edited again" in packet_file.read_bytes()
        assert "changed on disk" in status_line(app)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert load_packet(packet_file).packet.inputs.sla.p99_ms == 95.0


async def test_shipped_example_is_never_overwritten(make_app: MakeApp) -> None:
    example = Path(example_path(DEFAULT_EXAMPLE))
    before = example.read_bytes()
    app = make_app(example)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await focus_field(app, pilot, "sla.p99_ms")
        await retype(pilot, "95")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, SaveAsScreen)  # ctrl+s offers a copy instead
        assert "shipped example" in app.screen.reason
        await pilot.press("escape")
        await pilot.pause()
        assert "save-as cancelled" in status_line(app)
    assert example.read_bytes() == before
    drafts.remove_draft(drafts.draft_path(example, app.drafts_folder))


async def test_save_as_writes_a_copy_of_the_shipped_example_and_edits_it(
    make_app: MakeApp, tmp_path: Path
) -> None:
    example = Path(example_path(DEFAULT_EXAMPLE))
    before = example.read_bytes()
    copy = tmp_path / "mine" / "copy.yaml"
    copy.parent.mkdir()
    app = make_app(example)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await focus_field(app, pilot, "sla.p99_ms")
        await retype(pilot, "95")
        await pilot.pause(DRAFT_DELAY_S + 0.1)
        example_draft = drafts.draft_path(example, app.drafts_folder)
        assert app.wait_for_drafts(10)
        assert example_draft.exists()  # the edit is kept for the example until saved
        await pilot.press("ctrl+s")
        await pilot.pause()
        path_input = app.screen.query_one("#save-as-path", Input)
        path_input.value = str(example)  # an existing file is refused, nothing written
        await pilot.press("enter")
        await pilot.pause()
        assert "exists (choose a new file name)" in status_line(app)
        assert example.read_bytes() == before
        await pilot.press("ctrl+s")
        await pilot.pause()
        path_input = app.screen.query_one("#save-as-path", Input)
        path_input.value = str(copy)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, SaveAsScreen)
        assert load_packet(copy).packet.inputs.sla.p99_ms == 95.0
        assert app.working.source == copy.resolve() and not app.working.dirty
        assert f"Saved {copy.resolve()}" in status_line(app)
        assert not example_draft.exists()  # saved in the copy: nothing to recover later
        await focus_field(app, pilot, "sla.p99_ms")
        await retype(pilot, "90")
        await pilot.press("ctrl+s")  # the copy is an ordinary file now: saved in place
        await pilot.pause()
        assert load_packet(copy).packet.inputs.sla.p99_ms == 90.0
    assert example.read_bytes() == before


def make_draft(packet_file: Path, folder: Path) -> WorkingPacket:
    edited = apply_edit(working_for(packet_file), ("inputs", "sla", "p95_ms"), 70.0)
    assert isinstance(edited, WorkingPacket)
    edited = set_pending(edited, ("inputs", "sla", "p99_ms"), "9O")
    drafts.write_draft(edited, folder)
    return edited


async def test_reopening_offers_the_draft_and_recovers_it(
    make_app: MakeApp, packet_file: Path
) -> None:
    app = make_app()
    make_draft(packet_file, app.drafts_folder)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, RecoverScreen)
        assert app.screen.question.changes == ("inputs.sla.p95_ms: 62.5 -> 70.0",)
        assert app.screen.question.refused_fields == ("inputs.sla.p99_ms",)
        await pilot.press("ctrl+n")  # step keys are off while the dialog is open
        await pilot.pause()
        assert isinstance(app.screen, RecoverScreen)
        await pilot.press("r")
        await settle(app, pilot)  # the SLA section is in a form piece (`mount_later`)
        assert app.working.packet.inputs.sla.p95_ms == 70.0 and app.working.dirty
        p99 = editor(app, "sla.p99_ms")
        assert p99.input.value == "9O" and p99.problem.startswith("expected a number")
        assert editor(app, "sla.p95_ms").input.value == "70.0"


async def test_discarding_the_draft_deletes_it(make_app: MakeApp, packet_file: Path) -> None:
    app = make_app(steps=LIGHT_STEPS)
    make_draft(packet_file, app.drafts_folder)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        assert app.working.packet.inputs.sla.p95_ms == 62.5
        assert not drafts.draft_path(packet_file, app.drafts_folder).exists()


async def test_keep_both_writes_the_draft_beside_the_packet(
    make_app: MakeApp, packet_file: Path
) -> None:
    app = make_app(steps=LIGHT_STEPS)
    make_draft(packet_file, app.drafts_folder)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await pilot.press("escape")  # Escape = keep both: nothing is lost
        await pilot.pause()
        kept = packet_file.with_name("packet.recovered.yaml")
        assert load_packet(kept).packet.inputs.sla.p95_ms == 70.0
        assert app.working.packet.inputs.sla.p95_ms == 62.5


async def test_hangup_while_the_dialog_is_open_keeps_the_old_draft(
    make_app: MakeApp, packet_file: Path
) -> None:
    app = make_app(steps=LIGHT_STEPS)
    make_draft(packet_file, app.drafts_folder)
    draft = drafts.draft_path(packet_file, app.drafts_folder)
    before = draft.read_bytes()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        app.save_draft_now()  # what a hangup does: must not replace the undecided draft
    assert draft.read_bytes() == before


async def test_corrupt_draft_is_reported_and_set_aside(
    make_app: MakeApp, packet_file: Path
) -> None:
    app = make_app(steps=LIGHT_STEPS)
    notes = record_notes(app)
    draft = drafts.draft_path(packet_file, app.drafts_folder)
    draft.parent.mkdir(parents=True)
    draft.write_bytes(b"{truncated")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert not isinstance(app.screen, RecoverScreen)
        assert any("unreadable draft" in m and s == "warning" for m, s in notes)
    assert draft.with_name(draft.name + ".corrupt-1").read_bytes() == b"{truncated"


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
async def test_signal_saves_the_draft_and_exits(
    make_app: MakeApp, packet_file: Path, signum: int
) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        field = await focus_field(app, pilot, "sla.p99_ms")
        await retype(pilot, "95", enter=False)  # mid-edit: typed, not yet applied
        assert field.problem == "" and app.working.packet.inputs.sla.p99_ms == 76.0
        os.kill(os.getpid(), signum)
        await pilot.pause(0.2)
    assert app.return_code == 128 + signum
    body = json.loads(drafts.draft_path(packet_file, app.drafts_folder).read_text())
    assert body["pending"] == {"inputs.sla.p99_ms": "95"}


async def test_no_color_gives_plain_plot_colours(make_app: MakeApp, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app(steps=LIGHT_STEPS)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert app.no_color
        from plotext._dict import themes

        name = register_plot_theme(app)
        assert name.endswith("-nocolor")
        assert themes[name][:3] == [NO_COLOR] * 3


async def test_ansi_theme_plot_colours_keep_ansi_indices(make_app: MakeApp) -> None:
    app = make_app(theme="workbench-ansi", steps=LIGHT_STEPS)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        from plotext._dict import themes

        canvas, _, _, _, series = themes[register_plot_theme(app)]
        assert canvas == NO_COLOR and series[0] == 4


@pytest.mark.parametrize("autosave", [False, True], ids=["saved-now", "autosaved"])
async def test_unwritable_drafts_folder_is_reported_once(
    make_app: MakeApp, tmp_path: Path, autosave: bool
) -> None:
    """Written at once (quit, hangup) or autosaved on the draft writer's thread once typing
    pauses, a draft that cannot be written is reported once and kept in the exit notes."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the drafts folder should be")
    app = make_app(drafts_folder=blocked / "drafts")
    notes = record_notes(app)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        await focus_field(app, pilot, "sla.p99_ms")
        for text in ("95", "96"):
            await retype(pilot, text)
            if autosave:
                await pilot.pause(DRAFT_DELAY_S + 0.1)
                assert app.wait_for_drafts(10)
                await pilot.pause()  # the writer's message reaches the UI loop
        if not autosave:
            app.save_draft_now()
        assert app.working.packet.inputs.sla.p99_ms == 96.0  # editing goes on
    errors = [m for m, severity in notes if severity == "error"]
    assert len(errors) == 1 and errors[0].startswith("draft not saved:")
    assert app.exit_notes["draft"] == errors[0]


async def test_quitting_before_the_form_is_complete_is_clean(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("ctrl+q")  # typed ahead: arrives while later sections are pending
    assert app.return_code == 0


async def test_q_types_in_a_field_and_quits_elsewhere(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        field = await focus_field(app, pilot, "metadata.power_mode")
        await pilot.press("end", "q")
        await pilot.pause()
        assert field.input.value == "nominalq" and app.is_running
        app.screen.query_one(StepList).focus()
        await pilot.pause()
        await pilot.press("q")  # typed text not applied: quitting asks first
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and app.is_running
        assert "not saved to the file" in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and not isinstance(app.screen, ConfirmScreen)
        assert "Not quit" in status_line(app)
        await pilot.press("q", "y")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0
