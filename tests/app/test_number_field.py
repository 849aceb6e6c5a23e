"""NumberField on its own, as phase 2's batch-policy and tile editors will use it."""

from __future__ import annotations

from textual.app import App, ComposeResult

from packets.schema import BatchPolicy, GemmTile
from workbench.core.form import field_spec
from workbench.widgets.field_editor import FieldEditor
from workbench.widgets.number_field import NumberField

MAX_BATCH = field_spec(BatchPolicy, "max_batch", ("baseline", "batch_policy", "max_batch"))
DELAY = field_spec(
    BatchPolicy, "max_queue_delay_ms", ("baseline", "batch_policy", "max_queue_delay_ms")
)


class Editors(App[None]):
    """Two number fields and a log of what they post."""

    def __init__(self) -> None:
        super().__init__()
        self.posted: list[tuple[str, object, bool]] = []

    def compose(self) -> ComposeResult:
        yield NumberField(MAX_BATCH, 1020, id="batch")
        yield NumberField(DELAY, 2.0, step=0.5, id="delay")

    def on_field_editor_edited(self, event: FieldEditor.Edited) -> None:
        self.posted.append((event.editor.spec.label, event.value, event.commit))
        event.editor.accepted = event.value  # the owner applies the value...
        event.editor.problem = ""  # ...and says whether it was refused

    def on_field_editor_refused(self, event: FieldEditor.Refused) -> None:
        self.posted.append((event.editor.spec.label, event.reason, False))


def test_specs_outside_inputs_carry_schema_bounds_and_units() -> None:
    assert (MAX_BATCH.kind, MAX_BATCH.gt, MAX_BATCH.le, MAX_BATCH.unit) == ("integer", 0, 1024, "")
    assert (DELAY.kind, DELAY.ge, DELAY.unit, DELAY.short_label) == (
        "number",
        0,
        "ms",
        "max_queue_delay_ms",
    )
    assert field_spec(GemmTile, "m", ("baseline", "tiles", "q_proj", "m")).gt == 0


async def test_arrows_step_within_bounds_and_typing_is_checked() -> None:
    app = Editors()
    async with app.run_test(size=(80, 10)) as pilot:
        batch = app.query_one("#batch", NumberField)
        batch.input.focus()
        await pilot.press("up", "up", "up", "up", "up")  # 1020 -> 1024, then refused
        await pilot.pause()
        assert [v for _, v, commit in app.posted if commit] == [1021, 1022, 1023, 1024]
        assert batch.problem == "must be at most 1024, got 1025: not stepped"
        assert batch.text == "1024"
        delay = app.query_one("#delay", NumberField)
        delay.input.focus()
        await pilot.press("shift+down", "down")  # step 0.5: 2.0 -> -3.0 refused, then 1.5
        await pilot.pause()
        assert delay.problem == ""
        assert app.posted[-1] == ("batch_policy.max_queue_delay_ms", 1.5, True)
        await pilot.press("end", "ctrl+u", "x")
        await pilot.pause()
        assert app.posted[-1] == (
            "batch_policy.max_queue_delay_ms",
            "expected a number, got 'x'",
            False,
        )
        assert delay.has_class("-invalid")


async def test_a_late_copy_of_typed_text_never_overwrites_newer_keys() -> None:
    # The screen syncs an editor from the packet's pending text after each keystroke; a sync
    # that arrives after further keys carries older text (seen in tmux: "1.5" became "15").
    app = Editors()
    async with app.run_test(size=(80, 10)) as pilot:
        delay = app.query_one("#delay", NumberField)
        delay.input.focus()
        await pilot.press("end", "ctrl+u", "1", ".", "5")
        delay.show_value(2.0, "1")  # the copy made after the first key
        assert delay.text == "1.5"
        delay.input.blur()
        await pilot.pause()
        delay.show_value(2.0, "1.75")  # not being typed in: recovered text is shown
        assert delay.text == "1.75"
