"""The Release step: ship, ship-guarded or hold by the documented rule, with its reasons.

ctrl+r applies `triage.review.release.release` to the packet as it stands (the rule reads the
proposal, the matrix and the review guards; it takes about a millisecond, so it runs on the UI
thread). An owner may override the computed decision only with a written rationale
(`make_override`): ctrl+y records the override, and a missing or too short rationale is refused
under the field. Recommending again (ctrl+r) drops the override.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from packets.schema import Override
from workbench.core.session import WorkingPacket
from workbench.review.render import release_view
from workbench.review.state import release_state, set_outputs
from workbench.widgets.field_editor import ChoiceField, FieldEditor

from .compute import ComputeScreen, form_field

DECISIONS = ("ship", "ship-guarded", "hold")
ROLE = form_field("release", "role", "choice")
DECISION = form_field("release", "decision", "choice", choices=DECISIONS)
RATIONALE = form_field("release", "rationale", "text", optional=True)


class ReleaseScreen(ComputeScreen):
    """The recommendation, its rule and reasons, and an owner's override."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "recommend", "Recommend", id="recommend"),
        Binding("ctrl+y", "override", "Override", id="override"),
    ]

    def compose_main(self) -> ComposeResult:
        packet = self.workbench.working.packet
        roles = tuple(o.role for o in packet.owners)
        with VerticalScroll(classes="review-scroll", can_focus=False):
            yield from self.compose_status()
            yield Static(id="release", classes="result")
            with Vertical(classes="review-form"):
                yield Static("Owner override (ctrl+y)", classes="section")
                yield self.form_editor(replace(ROLE, choices=roles), roles[0], id="override-role")
                yield self.form_editor(DECISION, "ship-guarded", id="override-decision")
                yield self.form_editor(RATIONALE, None, id="override-rationale")

    def show_outputs(self, working: WorkingPacket) -> None:
        packet = working.packet
        state = release_state(packet)
        self.say("status", f"Release: {state.status}: {state.detail}", state.status)
        self.query_one("#release", Static).update(release_view(packet.outputs.release))
        role = self.query_one("#override-role", ChoiceField)
        roles = tuple(o.role for o in packet.owners)
        if roles != role.spec.choices:
            self.set_choices(role, roles, self.form.get("role"))

    def _record(self, override: Override | None) -> None:
        from triage.review.release import release

        working = self.workbench.working
        out = working.packet.outputs
        if out.mitigation is None or out.validation_matrix is None:
            self.show_error("needs a proposal and its validation matrix first (steps 6 and 7)")
            return
        decision = release(working.packet, override)
        updated = set_outputs(working, release=decision)
        if not isinstance(updated, WorkingPacket):
            self.show_error(f"recommendation not recorded: {updated.message}")
            return
        self.show_error("")
        self.workbench.working = updated
        self.tell(f"Release: {decision.recommendation}; unsaved until ctrl+s")

    def action_recommend(self) -> None:
        """Decide ship / ship-guarded / hold by the rule (drops any override)."""
        self._record(None)

    def action_override(self) -> None:
        """Record an owner's override of the computed decision, with the written rationale."""
        from triage.review.release import make_override

        editor = self.query_one("#override-rationale", FieldEditor)
        try:
            override = make_override(
                self.workbench.working.packet,
                self.form.get("role") or "",
                self.form.get("decision") or "",
                self.form.get("rationale") or "",
            )
        except ValueError as exc:
            editor.problem = str(exc)
            self.tell(f"No override recorded: {exc}", "error")
            return
        editor.problem = ""
        self._record(override)
