"""The app as a new user meets it at 80x24 (issue 12): a refused action leaves focus where it
was and says why in the status line, results of actions land there too, quitting asks while
something is unsaved, Escape puts back the accepted value, the Mapping report says when a
telemetry file is missing and is cleared when its inputs change, and the quick/full matrix
toggle says which matrix the form holds. Real app under run_test, driven by keys (Pilot)."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from itertools import pairwise
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


EXIT_DRAFT_S = 0.08
"""How long the exit's draft write holds the UI loop in the test below: a slow disk's fsync
(70 ms was seen on this machine's), and more than a stall (STALL_MS)."""


async def test_a_stall_report_times_the_exit_apart(make_app: MakeApp, tmp_path: Path) -> None:
    # The draft written once a quit is confirmed is the exit's lag, not a stall of the session.
    report = tmp_path / "stalls.json"
    app = make_app(stall_report=report)
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        field = app.screen.query(FieldEditor).first()
        field.input.focus()
        await pilot.press("ctrl+u", "1", "enter")  # an edit: the quit asks, then writes a draft
        await settle(app, pilot)
        write_draft = app.save_draft_now

        def on_a_slow_disk() -> None:
            write_draft()
            time.sleep(EXIT_DRAFT_S)  # the UI loop's own thread: nothing else runs meanwhile

        app.save_draft_now = on_a_slow_disk  # type: ignore[method-assign]
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
    written = json.loads(report.read_text())
    assert written["samples"] > 0
    assert written["after_quit_max_ms"] >= EXIT_DRAFT_S * 1000 - 10  # one 10 ms sleep into it
    assert written["after_quit_max_ms"] not in [stall["lag_ms"] for stall in written["worst"]]
    assert len(written["worst"]) <= written["stalls"]


async def test_quit_asks_for_an_unsaved_tune_edit_on_a_step_not_shown(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 4)
        fusion = editor(app, "tune-fusion")
        fusion.input.focus()
        await pilot.press("ctrl+u", *"standard", "enter")
        await settle(app, pilot)
        await goto(pilot, app, 5)  # Tune is off screen now, its working configuration kept
        assert app.current_step == "mapping" and not app.working.dirty
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen) and app.is_running
        assert "Tune working configuration" in app.screen.question
        await pilot.press("y")
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


def label_cells(editor) -> list[tuple[str, bool, bool]]:  # type: ignore[no-untyped-def]
    """The label column as drawn: (character, reversed, bold) per cell of its first row."""
    strip = editor.render_line(0)
    cells = [
        (char, bool(style and style.reverse), bool(style and style.bold))
        for text, style, _ in strip
        for char in text
    ]
    return cells[: editor.input.styles.margin.left - 1]


async def test_focus_shows_without_colour(make_app: MakeApp, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 7)
        seeds = editor(app, "matrix-seeds")
        drawn = label_cells(seeds)
        assert "".join(c for c, _, _ in drawn).rstrip() == "seeds"
        assert not any(reverse for _, reverse, _ in drawn)
        seeds.input.focus()
        await pilot.pause()
        # Styles, not colours: what NO_COLOR and a 256-colour terminal both still draw. The
        # whole label column is reversed and bold, not just the word.
        assert all(reverse and bold for _, reverse, bold in label_cells(seeds))
        assert seeds.input.styles.text_style.underline
        await pilot.press("escape")  # to the step list: its cursor row is reversed
        await pilot.pause()
        steps = app.screen.query_one(StepList)
        assert app.focused is steps and not any(r for _, r, _ in label_cells(seeds))
        row = steps.get_component_styles("option-list--option-highlighted")
        assert row.text_style.reverse


async def test_every_packet_field_shows_its_whole_label_and_unit_at_80x24(
    make_app: MakeApp,
) -> None:
    # Labels longer than the compact label column (25 cells) wrap onto more rows of the field,
    # and units onto more rows of theirs: never cut, never run into the value.
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)  # every piece of the form mounted
        editors = list(app.screen.query(FieldEditor))
        assert len(editors) > 40
        wrapped = 0
        for field in editors:
            label_width, unit_width = (
                field.input.styles.margin.left,
                field.input.styles.margin.right,
            )
            rows = [
                field.render_line(y).text.ljust(field.size.width) for y in range(field.size.height)
            ]
            label = "".join(row[: label_width - 1].strip() for row in rows)
            unit = "".join(row[len(row) - unit_width + 1 :].strip() for row in rows)
            assert label == (field.spec.short_label or field.spec.label)
            assert unit == field.spec.unit
            assert all(row[label_width - 1] == " " for row in rows)  # the gap before the value
            wrapped += field.size.height > 1
        assert wrapped  # the longest labels (29 cells) do wrap at 80 columns


# --- charts ------------------------------------------------------------------------------


def test_nice_ticks_are_round_and_cover_the_range() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from workbench.lab.chart_data import nice_step, nice_ticks, tick_label

    assert nice_ticks(44.6, 103.2, 5) == (40.0, 120.0, (40.0, 60.0, 80.0, 100.0, 120.0))
    assert nice_ticks(0.0, 2.45, 5)[2] == (0.0, 0.5, 1.0, 1.5, 2.0, 2.5)
    assert [tick_label(v) for v in (62.5, 100.0, 0.25, 1.0)] == ["62.5", "100", "0.25", "1"]

    @given(
        st.floats(-1e6, 1e6, allow_nan=False),
        st.floats(1e-2, 1e6, allow_nan=False),  # chart values: spans far above float noise
        st.integers(1, 12),
    )
    def check(lo: float, span: float, count: int) -> None:
        low, high, ticks = nice_ticks(lo, lo + span, count)
        step = nice_step((lo + span) - lo, count)  # the span as floats hold it
        assert low <= lo + 1e-6 * step and high >= (lo + span) - 1e-6 * step  # covered
        assert len(ticks) - 1 <= count + 1  # widening to round limits adds at most one
        gaps = {round((b - a) / step, 6) for a, b in pairwise(ticks)}
        assert gaps <= {1.0}  # evenly spaced
        mantissa = step / 10 ** math.floor(math.log10(step))
        assert round(mantissa, 6) in {1.0, 2.0, 2.5, 5.0, 10.0}

    check()


async def test_tune_chart_labels_sla_lines_and_tells_series_apart_without_colour(
    make_app: MakeApp, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from workbench.widgets.charts import Chart

    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await goto(pilot, app, 4)
        latency = app.screen.query_one("#tune-latency", Chart)
        lines = latency.render().plain.splitlines()  # type: ignore[union-attr]
        sla = app.working.packet.inputs.sla
        for target in (sla.p95_ms, sla.p99_ms):
            # the SLA line is drawn on the row whose tick is its own value
            row = next(line for line in lines if line.lstrip().startswith(f"{target:g}├"))
            assert "─" in row
        ticks = [float(m[1]) for line in lines if (m := re.match(r"\s*([0-9.]+)[┤├]", line))]
        ticks = sorted(t for t in ticks if t not in (sla.p95_ms, sla.p99_ms))
        step = min(b - a for a, b in pairwise(ticks))
        assert len(ticks) >= 3 and step / 10 ** math.floor(math.log10(step)) in (1, 2, 2.5, 5)
        assert all(round(t / step, 6).is_integer() for t in ticks)  # round ticks between
        # At 80x24 the legend shares the title row (above the frame, over no data); the SLA
        # lines are named once there, their values being the ticks they sit on.
        assert lines[0].strip() == "Latency by percentile, ms · ⠤ baseline  • working  ─ SLA"
        plot = "\n".join(lines[1:])
        assert "•" in plot and any("\u2800" < c <= "\u28ff" for c in plot)  # two glyphs


def test_a_legend_too_long_for_the_title_row_gets_a_row_of_its_own() -> None:
    import numpy as np

    from workbench.lab.chart_data import ChartData, Series
    from workbench.widgets.charts import title_and_legend

    data = ChartData(
        kind="lines",
        title="p99 vs load, ms",
        series=(
            Series("baseline", np.zeros(2), np.zeros(2)),
            Series("working", np.zeros(2), np.zeros(2)),
        ),
        hlines=(76.0,),
        hline_labels=("p99 SLA 76",),
        hline_name="SLA",
    )
    full = "⠤ baseline  • working  ─ p99 SLA 76"
    assert title_and_legend(data, 120) == (f"p99 vs load, ms · {full}", "")
    assert title_and_legend(data, 50) == ("p99 vs load, ms · ⠤ baseline  • working  ─ SLA", "")
    assert title_and_legend(data, 30) == ("p99 vs load, ms", full)


async def test_tab_scrolls_a_field_into_view_in_one_step(make_app: MakeApp, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Animated scrolling repainted the whole form on each of its frames, per Tab (and sent
    # each frame over SSH): a Tab moves the form at most once, straight to where the field
    # shows, unless the user asked Textual for animations.
    monkeypatch.delenv("TEXTUAL_ANIMATIONS", raising=False)
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await settle(app, pilot)
        form = app.screen.query_one("#form")
        editors = list(app.screen.query(FieldEditor))
        editors[0].input.focus()
        await pilot.pause()
        positions: list[float] = []
        form.watch(form, "scroll_y", lambda y: positions.append(y), init=False)
        moves = []  # positions the form took during each Tab
        for _ in range(30):
            before = len(positions)
            await pilot.press("tab")
            await pilot.pause(0.3)  # long enough for any scroll animation to finish
            moves.append(len(positions) - before)
            focused = app.focused
            assert isinstance(focused.parent, FieldEditor)
            assert form.region.contains_region(focused.region)
        assert form.scroll_y > 0 and sum(moves) >= 2  # the form scrolled, more than once
        assert max(moves) == 1  # each time in one jump, no frames in between
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "full")
    assert make_app().animation_level == "full"
