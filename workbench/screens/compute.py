"""ComputeScreen: a step screen that runs model work off the UI thread, and the small form fields
(not packet fields) its actions read.

One exclusive worker per screen: it waits a short debounce (a burst of edits runs once, for the
last value), then runs the work in a thread (`asyncio.to_thread`), so the UI keeps drawing. A
busy line appears when work takes longer than BUSY_AFTER_S; a failure is one line on the screen,
never a crash (`exit_on_error=False`, and exceptions are caught). Work runs on a channel (one
per kind of result); a newer start on a channel supersedes the older one, whose result is then
dropped: a stale result never overwrites a newer one. Threads cannot be interrupted, so long work takes a `threading.Event` to
stop at its next checkpoint (the validation matrix stops between chunks).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, ClassVar, TypeVar

from textual.app import ComposeResult
from textual.widgets import Input

from packets.errors import UsageError
from workbench.core.form import FieldSpec
from workbench.core.session import WorkingPacket
from workbench.widgets.editors import editor_for
from workbench.widgets.field_editor import ChoiceField, FieldEditor
from workbench.widgets.note import Note

from .base import StepScreen

T = TypeVar("T")
PROBLEM_NOTES = frozenset({"error", "sign-problem", "export-problem", "action-problem"})
BUSY_AFTER_S = 0.3  # show that work is running when it takes longer than this
DEBOUNCE_S = 0.15  # wait this long after the last request before computing


def form_field(
    group: str, name: str, kind: str, *, unit: str = "", optional: bool = False, **extra: Any
) -> FieldSpec:
    """A FieldSpec for a value an action reads (not a packet field): path ('form', group, name)."""
    return FieldSpec(("form", group, name), name, kind, unit=unit, optional=optional, **extra)  # type: ignore[arg-type]


def shown_as(spec: FieldSpec, group: str, name: str) -> FieldSpec:
    """A packet field's spec (bounds, kind) shown under another label (path ('form', group, name)):
    for editors of list items, whose packet paths carry an index."""
    return replace(spec, path=("form", group, name), label=name)


class PasswordField(FieldEditor):
    """A text field whose characters are hidden (the key's passphrase). Its text is never put in
    the packet, in drafts or in messages."""

    def compose(self) -> ComposeResult:
        from textual.widgets import Label

        yield Label(self.spec.short_label, classes="field-label")
        yield Input("", password=True, select_on_focus=False, compact=True)
        yield Label(self.spec.unit, classes="field-unit")


def one_line(exc: BaseException) -> str:
    """An exception as the one line a user sees (messages of our own errors as they are)."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    first = text.strip().splitlines()[0] if text.strip() else ""
    if isinstance(exc, UsageError | ValueError | KeyError | OSError):
        return first or type(exc).__name__
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class ComputeScreen(StepScreen):
    """A step screen with off-thread compute, a busy line and a one-line error line.

    Subclasses yield `compose_status()` where those lines go, read form fields with `form_value`
    and start work with `start_compute`.
    """

    BUSY_AFTER_S: ClassVar[float] = BUSY_AFTER_S

    def __init__(self, step: Any) -> None:
        super().__init__(step)
        self._stops: dict[str, threading.Event] = {}  # each channel's newest work
        self.form: dict[str, Any] = {}
        """Values of the screen's form fields, by field name (what its actions read)."""
        self._outputs_for: tuple[Any, bool, str] | None = None

    def show_packet(self, working: WorkingPacket) -> None:
        # Typing changes only the refused-text map: the outputs are redrawn only when the packet
        # itself (or whether it is saved) changed, so a keystroke stays cheap on a full screen.
        previous = self._outputs_for
        if (
            previous is None
            or previous[0] is not working.packet
            or previous[1:] != (working.dirty, working.source_sha256)
        ):
            self._outputs_for = (working.packet, working.dirty, working.source_sha256)
            self.show_outputs(working)
        self.sync_fields(working)

    def show_outputs(self, working: WorkingPacket) -> None:
        """Redraw what depends on the packet (statuses, tables, guards)."""

    def sync_fields(self, working: WorkingPacket) -> None:
        """Bring packet-field editors up to date (values and refused text)."""

    def compose_status(self) -> ComposeResult:
        """The screen's status, busy and error lines."""
        yield Note(id="status", classes="status")
        yield Note(id="busy", classes="busy")
        yield Note(id="error", classes="compute-error")

    def say(self, note_id: str, text: str, state: str | None = None) -> None:
        """Show `text` in note `note_id`; `state` (missing/stale/current) colours a status."""
        note = self.query_one(f"#{note_id}", Note)
        note.say(text)
        if text and note_id in PROBLEM_NOTES:  # where the user looks, not only in the form
            self.tell(text, "error")
        if state is not None:
            for name in ("missing", "stale", "current"):
                note.set_class(name == state, f"-{name}")

    def show_error(self, text: str) -> None:
        """One line saying what failed ('' clears it)."""
        self.say("error", text)

    def running(self, channel: str = "main") -> bool:
        """True while this screen's work on `channel` is in flight."""
        group = self._group(channel)
        return any(w.group == group and w.is_running for w in self.workers)

    def _group(self, channel: str) -> str:
        return f"compute-{self.step.id}-{channel}"

    def start_compute(
        self,
        label: str,
        work: Callable[[threading.Event], T],
        done: Callable[[T], None],
        *,
        debounce: bool = False,
        failed: Callable[[BaseException], None] | None = None,
        channel: str = "main",
    ) -> None:
        """Run `work(stop)` in a thread, then `done(result)` on the UI thread, unless a newer
        start on the same `channel` came first (channels run side by side). `stop` is set when
        a newer start or `stop_compute` supersedes the work."""
        previous = self._stops.get(channel)
        if previous is not None:
            previous.set()  # the previous work (if any) stops at its next checkpoint
        self._stops[channel] = stop = threading.Event()
        self.show_error("")
        self.run_worker(
            self._compute(label, work, done, failed, stop, debounce),
            group=self._group(channel),
            exclusive=True,
            exit_on_error=False,
        )

    def stop_compute(self, channel: str = "main") -> None:
        """Ask the running work on `channel` to stop at its next checkpoint."""
        stop = self._stops.get(channel)
        if stop is not None:
            stop.set()

    def is_newest(self, stop: threading.Event) -> bool:
        """True when the work given `stop` is its channel's latest start (its results may be
        shown)."""
        return any(stop is newest for newest in self._stops.values())

    async def _compute(
        self,
        label: str,
        work: Callable[[threading.Event], T],
        done: Callable[[T], None],
        failed: Callable[[BaseException], None] | None,
        stop: threading.Event,
        debounce: bool,
    ) -> None:
        if debounce:
            await asyncio.sleep(DEBOUNCE_S)
        timer = self.set_timer(self.BUSY_AFTER_S, lambda: self._busy(stop, label))
        try:
            result = await asyncio.to_thread(work, stop)
        except Exception as exc:  # a failure is a line on screen, never a crash
            if self.is_newest(stop):
                (failed or (lambda e: self.show_error(f"{label}: {one_line(e)}")))(exc)
            return
        finally:
            timer.stop()
            if self.is_newest(stop) and self.is_attached:
                self.say("busy", "")
        if self.is_newest(stop) and self.is_attached:
            done(result)

    def _busy(self, stop: threading.Event, label: str) -> None:
        if self.is_newest(stop) and self.is_attached:
            self.say("busy", f"⟳ {label}…")

    def on_unmount(self) -> None:
        for stop in self._stops.values():
            stop.set()  # a thread still running stops at its next checkpoint

    # --- form fields -------------------------------------------------------------------------

    def form_editor(self, spec: FieldSpec, value: Any, *, id: str) -> FieldEditor:
        """An editor for form field `spec` (its value kept in `self.form`)."""
        self.form[spec.short_label] = value
        return editor_for(spec, value, id=id)

    # Textual calls a message's handlers on every class of the MRO: subclasses never define these
    # two, they map editors to packet fields with `packet_path` (and may override
    # `packet_field_edited`).
    def on_field_editor_edited(self, event: FieldEditor.Edited) -> None:
        event.stop()
        editor = event.editor
        path = self.packet_path(editor)
        if path is not None:
            self.packet_field_edited(path, event)
            return
        self.form[editor.spec.short_label] = event.value
        editor.problem = ""
        if event.commit:  # typing alone is not accepted: Escape puts back the committed value
            editor.accepted = event.value
            self.form_committed(editor.spec.short_label, event.value)

    def on_field_editor_refused(self, event: FieldEditor.Refused) -> None:
        event.stop()  # the editor shows why; form text is never kept in drafts
        path = self.packet_path(event.editor)
        if path is not None:
            self.workbench.keep_typed(path, event.text)

    def packet_path(self, editor: FieldEditor) -> tuple[str | int, ...] | None:
        """The packet field an editor edits (None: a form field the screen's actions read)."""
        return None

    def packet_field_edited(self, path: tuple[str | int, ...], event: FieldEditor.Edited) -> None:
        """A packet field's text: checked as typed, applied when committed (`field_edited`)."""
        self.field_edited(path, event)

    def form_committed(self, name: str, value: Any) -> None:
        """A form field took a new value (Enter, leaving it, a step or a pick)."""

    def set_choices(self, editor: ChoiceField, choices: tuple[str, ...], value: str | None) -> None:
        """Give a choice field a new set of choices, keeping `value` (else the first)."""
        chosen = value if value in choices else (choices[0] if choices else None)
        editor.spec = replace(editor.spec, choices=choices)
        self.form[editor.spec.short_label] = chosen
        editor.show_value(chosen)
