"""The Packet step: every input field, editable, with problems shown where they are."""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from packets.errors import Problem, dotted
from workbench.core.form import SECTION_TITLES, FieldSpec, input_fields, value_at
from workbench.core.session import WorkingPacket
from workbench.widgets.editors import editor_for
from workbench.widgets.field_editor import FieldEditor
from workbench.widgets.note import Note

from .base import StepScreen

PIECE_EDITORS = 8
"""Editors per piece the form mounts after its first frame: ~3-5 ms of UI-thread CPU each on
the 2-core machine (43 below the first section took 130-250 ms in one piece), so a piece stays
near 30 ms and a key pressed meanwhile waits for one piece, not the form."""


def editor_id(spec: FieldSpec) -> str:
    """The DOM id of a field's editor, e.g. field-sla-p95_ms."""
    return "field-" + spec.label.replace(".", "-")


def _warning_for(spec: FieldSpec, warnings: tuple[Problem, ...]) -> str:
    here = [w.message for w in warnings if w.path[: len(spec.path)] == spec.path]
    return "; ".join(here)


class PacketScreen(StepScreen):
    """The packet's identity, its warnings, and one editor per input field by section."""

    def compose_main(self) -> ComposeResult:
        sections: dict[str, list[FieldSpec]] = {}
        for spec in input_fields():
            sections.setdefault(spec.section, []).append(spec)
        first, *self._later_sections = sections.values()
        with VerticalScroll(id="form", can_focus=False):
            yield Note(id="packet-identity")
            yield Note(id="packet-warnings")
            yield self._section(first)

    def _section(self, specs: list[FieldSpec]) -> Vertical:
        section = specs[0].section
        return Vertical(
            Static(SECTION_TITLES.get(section, section), classes="section"),
            *self._editors(specs),
            id=f"section-{section}",
            classes="form-section",
        )

    def _editors(self, specs: list[FieldSpec]) -> list[FieldEditor]:
        packet = self.workbench.working.packet  # built when mounted: the values of then
        return [editor_for(s, value_at(packet, s.path), id=editor_id(s)) for s in specs]

    def on_mount(self) -> None:
        # The first section paints with the screen; the rest mount right after it, a few
        # editors per refresh (`mount_later`), so neither the first frame nor a key pressed
        # right after it waits for the whole form. (A first frame of only the editors an 80x24
        # terminal shows came ~50 ms sooner, but the tmux walk's worst stall doubled with the
        # rest of the first section as one more piece: median of 6 walks 120 -> 240 ms.)
        form = self.query_one("#form")
        for specs in self._later_sections:
            head, rest = specs[:PIECE_EDITORS], specs[PIECE_EDITORS:]
            self.mount_later(form, lambda head=head: [self._section(head)])
            for start in range(0, len(rest), PIECE_EDITORS):
                chunk = rest[start : start + PIECE_EDITORS]
                self.mount_later(f"#section-{head[0].section}", partial(self._editors, chunk))
        self._later_sections = []

    def show_packet(self, working: WorkingPacket) -> None:
        packet = working.packet
        owners = ", ".join(o.name for o in packet.owners)
        identity = Text.assemble((packet.title, "bold"), f"\n{packet.topic} · owners: {owners}")
        self.query_one("#packet-identity", Note).say(identity)
        shown = [f"⚠ {dotted(w.path)}: {w.message}" for w in working.warnings]
        self.query_one("#packet-warnings", Note).say("\n".join(shown))
        for editor in self.query(FieldEditor):
            self._sync(editor, working)

    def _sync(self, editor: FieldEditor, working: WorkingPacket) -> None:
        spec = editor.spec
        pending = working.pending.get(dotted(spec.path))
        editor.show_value(value_at(working.packet, spec.path), pending)
        editor.warning = _warning_for(spec, working.warnings)
        if pending is not None and not editor.problem:
            editor.read(pending, commit=False)  # recovered text: say again what it lacks

    def on_field_editor_mounted(self, event: FieldEditor.Mounted) -> None:
        """A lazily mounted editor catches up with edits made since it was built."""
        event.stop()
        self._sync(event.editor, self.workbench.working)

    def on_field_editor_edited(self, event: FieldEditor.Edited) -> None:
        event.stop()
        self.field_edited(event.editor.spec.path, event)

    def on_field_editor_refused(self, event: FieldEditor.Refused) -> None:
        event.stop()
        self.workbench.keep_typed(event.editor.spec.path, event.text)
