"""The Proposal step: the baseline's bottleneck classification and the mitigation proposal.

ctrl+r runs `triage.review.proposal.classify` and `propose` (the baseline and every candidate on
the packet's workload slice) off the UI thread and writes both into the working packet's
outputs (saved with ctrl+s, like any edit). The rationale is required; trade-offs are typed
separated by semicolons.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from packets.schema import PRIMARY_METRICS, Classification, Mitigation
from workbench.core.session import WorkingPacket
from workbench.review.render import classification_text, mitigation_view
from workbench.review.state import loaded_from, proposal_state, set_outputs
from workbench.widgets.field_editor import ChoiceField, FieldEditor

from .compute import ComputeScreen, form_field

CANDIDATE = form_field("proposal", "candidate", "choice")
METRIC = form_field("proposal", "primary metric", "choice", choices=PRIMARY_METRICS)
RATIONALE = form_field("proposal", "rationale", "text", optional=True)
TRADE_OFFS = form_field("proposal", "trade-offs", "text", optional=True)
NO_CANDIDATES = ("(none)",)  # shown when the packet has no candidates


def split_trade_offs(text: str | None) -> list[str]:
    """Trade-offs typed on one line, separated by semicolons."""
    return [part.strip() for part in (text or "").split(";") if part.strip()]


class ProposalScreen(ComputeScreen):
    """Propose a candidate: classification, chosen candidate, every rejected alternative."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "propose", "Propose", id="propose"),
    ]

    def compose_main(self) -> ComposeResult:
        from triage.review.common import default_metric

        packet = self.workbench.working.packet
        m = packet.outputs.mitigation
        names = tuple(c.name for c in packet.candidates)
        with VerticalScroll(classes="review-scroll", can_focus=False):
            yield from self.compose_status()
            with Vertical(classes="review-form"):
                yield Static("Propose (ctrl+r)", classes="section")
                yield self.form_editor(
                    replace(CANDIDATE, choices=names or NO_CANDIDATES),
                    m.candidate if m and m.candidate in names else (names or NO_CANDIDATES)[0],
                    id="proposal-candidate",
                )
                yield self.form_editor(
                    METRIC, m.primary_metric if m else default_metric(packet), id="proposal-metric"
                )
                yield self.form_editor(
                    RATIONALE, m.rationale if m else None, id="proposal-rationale"
                )
                yield self.form_editor(
                    TRADE_OFFS, "; ".join(m.trade_offs) if m else None, id="proposal-trade-offs"
                )
            yield Static("Bottleneck classification", classes="section")
            yield Static(id="classification", classes="result")
            yield Static("Mitigation proposal", classes="section")
            yield Static(id="mitigation", classes="result")

    def show_outputs(self, working: WorkingPacket) -> None:
        packet = working.packet
        state = proposal_state(packet)
        self.say("status", f"Proposal: {state.status}: {state.detail}", state.status)
        candidate = self.query_one("#proposal-candidate", ChoiceField)
        names = tuple(c.name for c in packet.candidates) or NO_CANDIDATES
        if names != candidate.spec.choices:
            self.set_choices(candidate, names, self.form.get("candidate"))
        compact = self.has_class("-compact")
        self.query_one("#classification", Static).update(
            classification_text(packet.outputs.classification)
        )
        self.query_one("#mitigation", Static).update(
            mitigation_view(packet.outputs.mitigation, compact=compact)
        )

    def action_propose(self) -> None:
        """Classify the baseline and propose the chosen candidate (off the UI thread)."""
        rationale_editor = self.query_one("#proposal-rationale", FieldEditor)
        candidate = self.form.get("candidate")
        rationale = (self.form.get("rationale") or "").strip()
        if candidate not in {c.name for c in self.workbench.working.packet.candidates}:
            self.show_error("this packet has no candidates to propose")
            return
        if not rationale:
            rationale_editor.problem = "a proposal needs a written rationale"
            self.tell(
                "Not proposed: a proposal needs a written rationale (type it in 'rationale')",
                "error",
            )
            return
        from triage.review.common import default_metric

        working = self.workbench.working
        metric = self.form.get("primary metric") or default_metric(working.packet)
        trade_offs = split_trade_offs(self.form.get("trade-offs"))
        count = len(working.packet.candidates)

        def work(stop: threading.Event) -> tuple[str, Classification, Mitigation]:
            from packets.fingerprint import inputs_sha256
            from triage.review.proposal import classify, propose

            loaded = loaded_from(working, b"")  # the model reads the packet, never its bytes
            mitigation = propose(loaded, working.name, candidate, rationale, trade_offs, metric)
            return inputs_sha256(working.packet), classify(loaded, working.name), mitigation

        self.start_compute(
            f"Proposing: the baseline and {count} candidate(s) on the packet's slice",
            work,
            self._proposed,
        )

    def _proposed(self, result: tuple[str, Classification, Mitigation]) -> None:
        from packets.fingerprint import inputs_sha256

        digest, classification, mitigation = result
        working = self.workbench.working
        if inputs_sha256(working.packet) != digest:
            self.show_error("the inputs changed while proposing: ctrl+r proposes again")
            return
        updated = set_outputs(working, classification=classification, mitigation=mitigation)
        if not isinstance(updated, WorkingPacket):
            self.show_error(f"proposal not recorded: {updated.message}")
            return
        self.workbench.working = updated
        self.tell(f"Proposed {mitigation.candidate}: unsaved until ctrl+s")
