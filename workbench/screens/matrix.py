"""The Validation step: the validation matrix for the proposed candidate, and rollback triggers.

ctrl+r runs `triage.review.matrix.run_matrix` in the background with a progress bar; ctrl+g
cancels it between chunks, and a cancelled run writes nothing. A finished matrix goes into the
working packet's outputs with default rollback triggers (`triage.review.triggers`), unless the
triggers were edited: edited ones are kept (ctrl+l puts the defaults back). The triggers are
listed in a table; the five fields below it edit the trigger chosen by number (up/down steps
through them), and a value the packet cannot take is refused under its field.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import ProgressBar, Static

from packets.errors import dotted
from packets.schema import MAX_REQUESTS, Packet, RollbackTrigger, ValidationMatrix
from workbench.core.form import field_spec, format_value
from workbench.core.session import WorkingPacket
from workbench.review.render import matrix_view, triggers_view
from workbench.review.state import loaded_from, matrix_state, set_outputs, triggers_after
from workbench.widgets.editors import editor_for
from workbench.widgets.field_editor import FieldEditor
from workbench.widgets.note import Note

from .compute import ComputeScreen, form_field, one_line, shown_as

LOADS = form_field("matrix", "load factors", "numbers", gt=0, le=10, unit="x")
SEEDS = form_field("matrix", "seeds", "integer", gt=0, le=10)
REQUESTS = form_field("matrix", "requests", "integer", gt=0, le=MAX_REQUESTS, optional=True)
SPEC_EDITORS = {
    "load factors": "matrix-loads",
    "seeds": "matrix-seeds",
    "requests": "matrix-requests",
}
TRIGGER_FIELDS = ("metric", "comparison", "threshold", "window_s", "action")
TRIGGER = form_field("triggers", "trigger", "integer", ge=1, le=1)  # le: the trigger count

if TYPE_CHECKING:  # triage.review.matrix loads the model and polars: imported where used
    from triage.review.matrix import MatrixSpec


def spec_values(spec: MatrixSpec) -> dict[str, Any]:
    """A MatrixSpec as the form's values (requests None: the packet's request count)."""
    return {"load factors": list(spec.load_factors), "seeds": spec.seeds, "requests": spec.requests}


def recorded_spec(packet: Packet) -> MatrixSpec:
    """The spec of the packet's recorded matrix (requests None when it used the packet's
    count), or the full default one when there is none: what the form starts from."""
    from triage.review.matrix import MatrixSpec

    matrix = packet.outputs.validation_matrix
    if matrix is None:
        return MatrixSpec()
    requests = None if matrix.requests == packet.inputs.workload.requests else matrix.requests
    return MatrixSpec(tuple(matrix.load_factors), len(matrix.seeds), requests)


def quick_and_full() -> tuple[MatrixSpec, MatrixSpec]:
    """The quick matrix (a first look) and the full default one (what `workbench validate`
    runs)."""
    from triage.review.matrix import MatrixSpec

    return MatrixSpec.quick(), MatrixSpec()


class MatrixScreen(ComputeScreen):
    """Run the validation matrix, watch it, cancel it; edit the rollback triggers."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run_matrix", "Run", id="run-matrix", tooltip="Run matrix"),
        Binding("ctrl+g", "cancel_matrix", "Cancel run", id="cancel-matrix", show=False),
        Binding(
            "ctrl+y", "toggle_size", "Quick/full", id="matrix-size", tooltip="Quick/full matrix"
        ),
        Binding(
            "ctrl+l",
            "default_triggers",
            "Triggers",
            id="default-triggers",
            tooltip="Default triggers",
        ),
    ]

    def __init__(self, step: Any) -> None:
        super().__init__(step)
        self._progress_text = ""

    def compose_main(self) -> ComposeResult:
        with VerticalScroll(classes="review-scroll", can_focus=False):
            yield from self.compose_status()
            with Horizontal(id="matrix-progress-row"):
                yield ProgressBar(id="matrix-progress", show_eta=False)
                yield Note(id="matrix-progress-text", classes="busy")
            with Vertical(classes="review-form"):
                yield Static("Matrix (ctrl+r runs, ctrl+g cancels)", classes="section")
                yield Note(id="matrix-size", classes="hint")
                values = spec_values(recorded_spec(self.workbench.working.packet))
                for spec in (LOADS, SEEDS, REQUESTS):
                    name = spec.short_label
                    yield self.form_editor(spec, values[name], id=SPEC_EDITORS[name])
            yield Static(id="matrix", classes="result")
            yield Static("Rollback triggers (ctrl+l: defaults)", classes="section")
            yield Static(id="triggers-table", classes="result")
            with Vertical(id="trigger-editor", classes="review-form"):
                yield self.form_editor(TRIGGER, 1, id="trigger-number")
                yield Note(id="trigger-origin", classes="hint")
                for name in TRIGGER_FIELDS:
                    path = ("outputs", "rollback_triggers", 0, name)
                    spec = shown_as(field_spec(RollbackTrigger, name, path), "trigger", name)
                    yield editor_for(spec, None, id=f"trigger-{name}")

    def on_mount(self) -> None:
        self.query_one("#matrix-progress-row").display = False
        self.show_size()

    def show_size(self) -> None:
        """Say which matrix the form describes and what ctrl+y switches to."""
        quick, full = quick_and_full()
        spec = self.current_spec()
        if spec == quick:
            text = "size: quick matrix, a first look (ctrl+y: full)"
        elif spec == full:
            text = "size: full default matrix (ctrl+y: quick)"
        else:
            text = "size: custom matrix (ctrl+y: quick)"
        self.say("matrix-size", text)

    # --- showing ---------------------------------------------------------------------------

    def show_outputs(self, working: WorkingPacket) -> None:
        packet = working.packet
        state = matrix_state(packet)
        self.say("status", f"Validation matrix: {state.status}: {state.detail}", state.status)
        self.query_one("#matrix", Static).update(
            matrix_view(packet.outputs.validation_matrix, compact=self.has_class("-compact"))
        )
        triggers = packet.outputs.rollback_triggers
        compact = self.has_class("-compact")
        self.query_one("#triggers-table", Static).update(triggers_view(triggers, compact=compact))
        self.query_one("#trigger-editor").display = bool(triggers)
        number = self.query_one("#trigger-number", FieldEditor)
        if triggers and number.spec.le != len(triggers):
            number.spec = replace(number.spec, le=len(triggers))
            if self.selected_trigger >= len(triggers):
                self.form["trigger"] = len(triggers)
                number.show_value(len(triggers))

    @property
    def selected_trigger(self) -> int:
        """Index (0-based) of the trigger the editors edit."""
        return int(self.form.get("trigger") or 1) - 1

    def sync_fields(self, working: WorkingPacket) -> None:
        triggers = working.packet.outputs.rollback_triggers
        if not triggers:
            return
        index = min(self.selected_trigger, len(triggers) - 1)
        trigger = triggers[index]
        self.say("trigger-origin", f"derived from: {trigger.derived_from}")
        for name in TRIGGER_FIELDS:
            path = ("outputs", "rollback_triggers", index, name)
            editor = self.query_one(f"#trigger-{name}", FieldEditor)
            editor.show_value(getattr(trigger, name), working.pending.get(dotted(path)))

    def form_committed(self, name: str, value: object) -> None:
        if name in SPEC_EDITORS:
            self.show_size()
        if name == "trigger":  # another trigger chosen: its fields into the editors
            for field in TRIGGER_FIELDS:
                self.query_one(f"#trigger-{field}", FieldEditor).problem = ""
            self.sync_fields(self.workbench.working)

    # --- trigger edits (packet fields) -----------------------------------------------------

    def packet_path(self, editor: FieldEditor) -> tuple[str | int, ...] | None:
        name = (editor.id or "").removeprefix("trigger-")
        if name not in TRIGGER_FIELDS:
            return None
        return ("outputs", "rollback_triggers", self.selected_trigger, name)

    # --- actions ---------------------------------------------------------------------------

    def current_spec(self) -> MatrixSpec:
        """The matrix the form describes (empty fields: the defaults)."""
        from triage.review.matrix import DEFAULT_LOAD_FACTORS, DEFAULT_SEEDS, MatrixSpec

        return MatrixSpec(
            load_factors=tuple(self.form.get("load factors") or DEFAULT_LOAD_FACTORS),
            seeds=int(self.form.get("seeds") or DEFAULT_SEEDS),
            requests=self.form.get("requests"),
        )

    def action_toggle_size(self) -> None:
        """Switch the form between the quick matrix (a first look) and the full default one."""
        quick, full = quick_and_full()
        target = full if self.current_spec() == quick else quick
        for name, value in spec_values(target).items():
            editor = self.query_one(f"#{SPEC_EDITORS[name]}", FieldEditor)
            self.form[name] = value
            editor.show_value(value)
            editor.set_text(format_value(editor.spec, value))
            editor.problem = ""
        self.show_size()
        self.tell("Quick matrix (a first look)" if target == quick else "Full default matrix")

    def action_run_matrix(self) -> None:
        """Run the matrix for the proposed candidate in the background."""
        working = self.workbench.working
        mitigation = working.packet.outputs.mitigation
        if mitigation is None:
            self.show_error("no proposal yet: propose a candidate on the Proposal step first")
            return
        spec = self.current_spec()
        loop = asyncio.get_running_loop()

        def work(stop: threading.Event) -> tuple[str, str, ValidationMatrix]:
            from packets.fingerprint import inputs_sha256
            from triage.review.matrix import run_matrix

            def progress(done: int, total: int) -> None:
                loop.call_soon_threadsafe(self._progress, stop, done, total)

            matrix = run_matrix(
                loaded_from(working, b""),  # the model reads the packet, never its bytes
                mitigation.candidate,
                spec,
                progress=progress,
                cancelled=stop.is_set,
            )
            return inputs_sha256(working.packet), mitigation.candidate, matrix

        self._show_progress(0, None)
        self.start_compute(
            f"Validating {mitigation.candidate}", work, self._finished, failed=self._failed
        )

    def _progress(self, stop: threading.Event, done: int, total: int) -> None:
        if self.is_newest(stop) and self.is_attached:  # only the newest run reports
            self._show_progress(done, total)

    def _show_progress(self, done: int, total: int | None) -> None:
        row = self.query_one("#matrix-progress-row")
        row.display = True
        self.query_one("#matrix-progress", ProgressBar).update(total=total, progress=done)
        self._progress_text = f"{done} of {total} cells" if total else "starting"
        self.say("matrix-progress-text", f" {self._progress_text}")

    def _hide_progress(self) -> None:
        self.query_one("#matrix-progress-row").display = False

    def action_cancel_matrix(self) -> None:
        """Stop the running matrix after its current chunk; nothing is written."""
        if not self.running():
            self.show_error("no matrix is running")
            return
        self.stop_compute()
        self.say("matrix-progress-text", f" {self._progress_text}: cancelling…")

    def _failed(self, exc: BaseException) -> None:
        from triage.review.matrix import Cancelled

        self._hide_progress()
        if isinstance(exc, Cancelled):
            self.show_error(f"Matrix cancelled ({exc}): nothing written")
        else:
            self.show_error(f"Matrix failed: {one_line(exc)}")

    def _finished(self, result: tuple[str, str, ValidationMatrix]) -> None:
        from packets.fingerprint import inputs_sha256

        self._hide_progress()
        digest, candidate, matrix = result
        working = self.workbench.working
        mitigation = working.packet.outputs.mitigation
        if (
            inputs_sha256(working.packet) != digest
            or mitigation is None
            or (mitigation.candidate != candidate)
        ):
            self.show_error("the inputs or the proposal changed while validating: ctrl+r again")
            return
        triggers, defaults = triggers_after(working.packet, matrix)
        updated = set_outputs(working, validation_matrix=matrix, rollback_triggers=triggers)
        if not isinstance(updated, WorkingPacket):
            self.show_error(f"matrix not recorded: {updated.message}")
            return
        self.workbench.working = updated
        kept = "default triggers" if defaults else "your edited triggers kept (ctrl+l: defaults)"
        self.tell(f"Matrix recorded: {len(matrix.cells)} cells; {kept}; unsaved until ctrl+s")

    def action_default_triggers(self) -> None:
        """Replace the rollback triggers by the defaults derived from the SLA and the matrix."""
        from triage.review.triggers import default_triggers

        working = self.workbench.working
        matrix = working.packet.outputs.validation_matrix
        if matrix is None:
            self.show_error("no matrix yet: default triggers are derived from its margins")
            return
        updated = set_outputs(working, rollback_triggers=default_triggers(working.packet, matrix))
        if not isinstance(updated, WorkingPacket):
            self.show_error(f"triggers not reset: {updated.message}")
            return
        self.workbench.working = updated
        self.show_error("")
