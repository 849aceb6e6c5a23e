"""The Review step: the senior review question, the review guards, each owner's closure artifact
and signature state, signing and export.

Signatures are checked on the packet's current bytes (`review_state.current_bytes`): missing,
valid, or stale once anything is edited after signing. ctrl+r signs as the chosen owner with a
key file (its passphrase typed in a hidden field) or ssh-agent; a packet with unsaved edits is
saved first, after a confirmation (`signing_flow` says how signing works from the app). ctrl+y
exports YAML or markdown with `workbench export`'s rules; it stays disabled while a review guard
blocks.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from packets.errors import Problem, UsageError, dotted
from packets.schema import ROLES_BY_TOPIC, Artifact
from workbench.core.form import field_spec
from workbench.core.session import WorkingPacket, apply_edit, set_pending
from workbench.review.render import classification_text, guards_view, signatures_view
from workbench.review.state import artifact_edit, signature_report
from workbench.widgets.editors import editor_for
from workbench.widgets.field_editor import ChoiceField, FieldEditor
from workbench.widgets.note import Note

from .compute import ComputeScreen, PasswordField, form_field, one_line, shown_as
from .confirm import ConfirmScreen

KEY_FILE, AGENT = "key file", "ssh-agent"
SIGN_ROLE = form_field("sign", "sign as", "choice")
KEY_SOURCE = form_field("sign", "key from", "choice", choices=(KEY_FILE, AGENT))
KEY_PATH = form_field("sign", "key path", "text", optional=True)
PASSPHRASE = form_field("sign", "passphrase", "text", optional=True)
EXPORT_PATH = form_field("export", "export to", "text", optional=True)
EXPORT_FORMAT = form_field("export", "format", "choice", choices=("yaml", "markdown"))

if TYPE_CHECKING:  # signing loads cryptography and the review guards the model: imported where used
    from workbench.review.signing_flow import KeyChoice


class ReviewScreen(ComputeScreen):
    """Guards, artifacts, signatures; sign and export from here."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "sign", "Sign", id="sign"),
        Binding("ctrl+y", "export", "Export", id="export"),
    ]

    def __init__(self, step) -> None:  # type: ignore[no-untyped-def]
        super().__init__(step)
        self._blocked: list[str] = []  # ids of the guards that block now
        self._owner_fields: dict[str, tuple[int, str]] = {}  # editor id -> (owner index, field)

    @classmethod
    def preload(cls) -> None:
        import packets.signoff  # noqa: F401  (cryptography: ~0.1 s, for the signature report)
        import triage.review.guards  # noqa: F401

    def compose_main(self) -> ComposeResult:
        packet = self.workbench.working.packet
        roles = tuple(o.role for o in packet.owners)
        kinds = ROLES_BY_TOPIC[packet.topic]
        with VerticalScroll(classes="review-scroll", can_focus=False):
            yield from self.compose_status()
            yield Static("Review question", classes="section")
            yield Static(id="question", classes="result")
            yield Static("Review guards", classes="section")
            yield Static(id="guards", classes="result")
            yield Static("Owners and closure artifacts", classes="section")
            for index, owner in enumerate(packet.owners):
                yield Static(
                    f"{owner.role} ({kinds.get(owner.role, '')}): {owner.name} <{owner.principal}>",
                    classes="owner-title",
                )
                for name in ("ref", "summary"):
                    path = ("owners", index, "artifact", name)
                    spec = shown_as(field_spec(Artifact, name, path), "artifact", name)
                    spec = replace(spec, optional=True)  # an empty ref removes the artifact
                    editor_id = f"owner-{index}-{name}"
                    self._owner_fields[editor_id] = (index, name)
                    value = getattr(owner.artifact, name) if owner.artifact else None
                    yield editor_for(spec, value, id=editor_id)
            yield Static("Signatures", classes="section")
            yield Static(id="signatures", classes="result")
            with Vertical(classes="review-form"):
                yield Static("Sign (ctrl+r)", classes="section")
                yield self.form_editor(replace(SIGN_ROLE, choices=roles), roles[0], id="sign-role")
                yield self.form_editor(KEY_SOURCE, KEY_FILE, id="sign-source")
                yield self.form_editor(KEY_PATH, None, id="sign-key")
                self.form[PASSPHRASE.short_label] = None
                yield PasswordField(PASSPHRASE, None, id="sign-passphrase")
                yield Note(id="sign-problem", classes="action-problem")
            with Vertical(classes="review-form"):
                yield Static("Export (ctrl+y)", classes="section")
                yield self.form_editor(EXPORT_PATH, None, id="export-path")
                yield self.form_editor(EXPORT_FORMAT, "yaml", id="export-format")
                yield Note(id="export-problem", classes="action-problem")

    # --- showing ---------------------------------------------------------------------------

    def show_outputs(self, working: WorkingPacket) -> None:
        from triage.review.guards import blocking, review_guards

        packet = working.packet
        guards = review_guards(packet)
        self._blocked = [g.id for g in blocking(guards)]
        report = signature_report(working)
        valid = sum(r.status == "valid" for r in report.roles)
        signed = f"signatures: {valid} of {len(report.roles)} valid"
        if self._blocked:
            status = f"Review: {len(self._blocked)} guard(s) block signing and export; {signed}"
            state = "stale"
        else:
            status, state = f"Review: guards pass; {signed}", "current" if report.ok else "missing"
        self.say("status", status, state)
        self.query_one("#question", Static).update(
            classification_text(packet.outputs.classification)
        )
        self.query_one("#guards", Static).update(guards_view(guards))
        self.query_one("#signatures", Static).update(signatures_view(report, working.dirty))
        self.say(
            "export-problem",
            f"export is disabled while guards block: {', '.join(self._blocked)}"
            if self._blocked
            else "",
        )
        role = self.query_one("#sign-role", ChoiceField)
        roles = tuple(o.role for o in packet.owners)
        if roles != role.spec.choices:
            self.set_choices(role, roles, self.form.get("sign as"))
        self.refresh_bindings()

    def sync_fields(self, working: WorkingPacket) -> None:
        packet = working.packet
        for editor_id, (index, name) in self._owner_fields.items():
            if index >= len(packet.owners):
                continue
            artifact = packet.owners[index].artifact
            pending = working.pending.get(dotted(("owners", index, "artifact", name)))
            editor = self.query_one(f"#{editor_id}", FieldEditor)
            editor.show_value(getattr(artifact, name) if artifact else None, pending)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Export is shown but disabled while a review guard blocks."""
        if action == "export" and self._blocked:
            return None
        return True

    # --- artifacts (packet fields) -----------------------------------------------------------

    def packet_path(self, editor: FieldEditor) -> tuple[str | int, ...] | None:
        where = self._owner_fields.get(editor.id or "")
        return None if where is None else ("owners", where[0], "artifact", where[1])

    def packet_field_edited(self, path: tuple[str | int, ...], event: FieldEditor.Edited) -> None:
        """An artifact's ref or summary: a ref creates (or, emptied, removes) the artifact."""
        _, index, _, name = path
        working = self.workbench.working
        target = artifact_edit(working.packet, int(index), str(name), event.value)
        if isinstance(target, str):
            event.editor.problem = target
            self.workbench.keep_typed(path, event.text)
            return
        result = apply_edit(working, *target)
        if isinstance(result, Problem):
            event.editor.problem = result.message
            self.workbench.keep_typed(path, event.text)
            return
        event.editor.problem = ""
        if event.commit:
            self.workbench.working = set_pending(result, path, None)
        else:
            typed = event.value != event.editor.accepted
            self.workbench.keep_typed(path, event.text if typed else None)

    # --- signing ---------------------------------------------------------------------------

    def action_sign(self) -> None:
        """Sign the packet as the chosen owner (saving unsaved edits first, after asking)."""
        from workbench.review.signing_flow import KeyChoice, sign_refusal

        working = self.workbench.working
        refusal = sign_refusal(working)
        if not refusal and self.workbench.is_shipped_example():
            refusal = "this is a shipped example: copy it first (workbench examples copy)"
        self.say("sign-problem", refusal)
        if refusal:
            return
        agent = self.form.get("key from") == AGENT
        key = self.form.get("key path")
        if not agent and not key:
            editor = self.query_one("#sign-key", FieldEditor)
            editor.problem = "give the private key file's path (or choose ssh-agent)"
            self.tell("Not signed: give the private key file's path (or choose ssh-agent)", "error")
            return
        choice = KeyChoice(
            Path(key).expanduser() if key else None, self.form.get("passphrase") or "", agent
        )
        role = self.form.get("sign as") or ""
        if not working.dirty:
            self._sign(role, choice)
            return
        question = (
            f"Signing covers the file's bytes, so your unsaved edits are saved to "
            f"{working.source} first (canonical bytes: comments in the file are not kept). "
            "Save and sign?"
        )
        self.app.push_screen(
            ConfirmScreen("Save before signing?", question),
            lambda yes: self._sign(role, choice) if yes else self.say("sign-problem", "not signed"),
        )

    def _sign(self, role: str, choice: KeyChoice) -> None:
        from workbench.review.signing_flow import load_signer, sign_working

        before = self.workbench.working

        def work(stop: threading.Event) -> tuple[WorkingPacket, WorkingPacket]:
            return before, sign_working(before, role, load_signer(choice))

        self.start_compute(
            f"Signing as {role}",
            work,
            partial(self._signed, role),
            failed=lambda exc: self.say("sign-problem", f"not signed: {one_line(exc)}"),
        )

    def _signed(self, role: str, result: tuple[WorkingPacket, WorkingPacket]) -> None:
        before, after = result
        current = self.workbench.working
        if current is not before:  # edited while signing: keep the edits (they read as stale)
            packet = current.packet.model_copy(update={"signatures": after.packet.signatures})
            after = replace(after, packet=packet, pending=current.pending)
        self.form["passphrase"] = None
        self.query_one("#sign-passphrase", FieldEditor).set_text("")
        self.say("sign-problem", "")
        self.workbench.working = after
        self.tell(f"Signed as {role}: wrote {after.source}")

    # --- export ----------------------------------------------------------------------------

    def action_export(self) -> None:
        """Export the packet (YAML, byte for byte) or its markdown report."""
        target = self.form.get("export to")
        if not target:
            editor = self.query_one("#export-path", FieldEditor)
            editor.problem = "give a file to export to"
            self.tell("Not exported: give a file to export to ('export to')", "error")
            return
        self._export(Path(target).expanduser(), self.form.get("format") or "yaml", force=False)

    def _export(self, out: Path, fmt: str, *, force: bool) -> None:
        from triage.review.exporting import SignedTargetError
        from workbench.review.signing_flow import export_working

        try:
            backup = export_working(self.workbench.working, out, fmt, force=force)
        except SignedTargetError:
            self.app.push_screen(
                ConfirmScreen(
                    "Overwrite a signed packet?",
                    f"{out} holds a signed packet. Overwrite it? A backup {out.name}.bak is kept.",
                ),
                lambda yes: self._export(out, fmt, force=True) if yes else None,
            )
            return
        except (UsageError, OSError, ValueError) as exc:
            self.say("export-problem", f"not exported: {one_line(exc)}")
            return
        self.say("export-problem", "")
        kept = f"; backup {backup}" if backup else ""
        self.tell(f"Exported {out} ({fmt}){kept}")
