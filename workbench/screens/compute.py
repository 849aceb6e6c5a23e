"""ComputeScreen: the one base for step screens that run work off the UI thread, and the small
form fields (not packet fields) its actions read.

Work runs on a channel (one per kind of result) in one exclusive Textual worker per channel
(`run_worker(exclusive=True)`, what `@work(exclusive=True)` does, with the channel as the
group): with `debounce`, the worker first sleeps the class's DEBOUNCE_S (a newer start cancels
that sleep, so a burst of edits runs once, for the last value), then runs the work in a thread
(`asyncio.to_thread`), so the UI keeps drawing. A class with DEBOUNCE_LEADING runs the first
start of a burst at once (no start on its channel in the last DEBOUNCE_S: a single key waits
for nothing) and debounces only the starts that follow it closely. Threads cannot be
interrupted (NOTES), so every start gets a `Ticket`: its generation is compared when the
result lands (only the channel's newest may show it: a stale result never overwrites a newer
one), and its `stop` event is set when a newer start, `forget` or `stop_compute` supersedes it,
for long work to stop at its next checkpoint. One busy line says what runs once work takes longer than BUSY_AFTER_S; a
failure is one line on the screen, never a crash (`exit_on_error=False`, exceptions caught).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, ClassVar, TypeVar

from textual.app import ComposeResult

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
DEBOUNCE_S = 0.15  # wait this long after the last request before computing (NOTES: a burst of
# 10 edits ran one computation); screens whose keys repeat faster set their own (Tune: 0.05)


@dataclass(frozen=True)
class Ticket:
    """One start of work on a channel.

    Attributes:
        generation: the start's number on its channel (1, 2, ...); only the newest shows.
        stop: set once a newer start (or `forget`, `stop_compute`) supersedes it.
        finished: set once its work returned or failed (a busy timer that fires later, its
            callback already queued when the work ended, shows nothing).
    """

    generation: int
    stop: threading.Event = field(default_factory=threading.Event, compare=False)
    finished: threading.Event = field(default_factory=threading.Event, compare=False)


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

    hides_text = True

    def placeholder(self) -> str:
        return ""


def one_line(exc: BaseException) -> str:
    """An exception as the one line a user sees (messages of our own errors as they are)."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    first = text.strip().splitlines()[0] if text.strip() else ""
    if isinstance(exc, UsageError | ValueError | KeyError | OSError):
        return first or type(exc).__name__
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class WorkScreen(StepScreen):
    """A step screen with off-thread work, one busy line and one error line.

    Start work with `start_compute` (work given its stop event) or `compute` (a job of no
    arguments, its generation known for progress and staleness checks); subclasses yield
    `compose_status()` where the lines go (ids BUSY_NOTE and ERROR_NOTE).
    """

    BUSY_AFTER_S: ClassVar[float] = BUSY_AFTER_S
    DEBOUNCE_S: ClassVar[float] = DEBOUNCE_S
    DEBOUNCE_LEADING: ClassVar[bool] = False
    """Run a debounced start at once when it is the first of a burst (see the module doc)."""
    LOADS_MODEL: ClassVar[bool] = False
    """The screen's work runs on its own when shown and needs the model: until the app's
    warm-up has loaded it, work waits for the user to pause (`_model_ready`)."""
    BUSY_NOTE: ClassVar[str] = "busy"
    """DOM id of the note the busy line goes in."""
    ERROR_NOTE: ClassVar[str] = "error"
    """DOM id of the note the error line goes in."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tickets: dict[str, Ticket] = {}  # each channel's newest start
        self._started_at: dict[str, float] = {}  # monotonic() of each channel's newest start
        self._busy_labels: dict[str, str] = {}  # channels whose work shows as busy

    def compose_status(self) -> ComposeResult:
        """The busy and error lines."""
        yield Note(id=self.BUSY_NOTE, classes="busy")
        yield Note(id=self.ERROR_NOTE, classes="compute-error")

    def show_error(self, text: str) -> None:
        """One line saying what failed ('' clears it)."""
        notes = self.query(f"#{self.ERROR_NOTE}")
        if notes:
            notes.first(Note).say(text)

    # --- work off the UI thread ---------------------------------------------------------------

    def newest(self, channel: str = "main") -> int:
        """The generation of the newest start on `channel` (0 before any)."""
        ticket = self._tickets.get(channel)
        return ticket.generation if ticket is not None else 0

    def is_newest(self, stop: threading.Event) -> bool:
        """True when the work given `stop` is its channel's latest start (its results may be
        shown)."""
        return any(stop is ticket.stop for ticket in self._tickets.values())

    def running(self, channel: str = "main") -> bool:
        """True while this screen's work on `channel` is in flight."""
        group = self._group(channel)
        return any(w.group == group and not w.is_finished for w in self.workers)

    @property
    def busy(self) -> bool:
        """True while any work of this screen is in flight."""
        return any(w.group.startswith(self._group("")) and not w.is_finished for w in self.workers)

    def _group(self, channel: str) -> str:
        return f"compute-{self.step.id}-{channel}"

    def _next_ticket(self, channel: str) -> Ticket:
        previous = self._tickets.get(channel)
        if previous is not None:
            previous.stop.set()  # the previous work (if any) stops at its next checkpoint
        ticket = Ticket(self.newest(channel) + 1)
        self._tickets[channel] = ticket
        return ticket

    def _wait_first(self, channel: str, debounce: bool) -> bool:
        """Whether a start on `channel` sleeps DEBOUNCE_S before it runs: every debounced one,
        or with DEBOUNCE_LEADING only one that follows the channel's last start closely (a
        burst's first start runs at once). Call once per start, before its ticket."""
        now = time.monotonic()
        last = self._started_at.get(channel)
        self._started_at[channel] = now
        if not debounce:
            return False
        return not self.DEBOUNCE_LEADING or (last is not None and now - last < self.DEBOUNCE_S)

    def forget(self, channel: str = "main") -> None:
        """Drop whatever `channel` has in flight (its result will not be shown)."""
        self._next_ticket(channel)
        if self._busy_labels.pop(channel, None) is not None:
            self._say_busy()

    def stop_compute(self, channel: str = "main") -> None:
        """Ask the running work on `channel` to stop at its next checkpoint (its outcome, often
        the work's own cancellation error, is still shown)."""
        ticket = self._tickets.get(channel)
        if ticket is not None:
            ticket.stop.set()

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
        debounce = self._wait_first(channel, debounce)
        ticket = self._next_ticket(channel)
        self._launch(channel, ticket, label, partial(work, ticket.stop), done, failed, debounce)

    def compute(
        self,
        channel: str,
        job: Callable[[], T],
        apply: Callable[[T], None],
        *,
        debounce: bool = False,
        label: str = "running the model",
    ) -> int:
        """Run `job()` in a thread and `apply(result)` here, if still the newest of `channel`.
        Returns the start's generation."""
        debounce = self._wait_first(channel, debounce)
        ticket = self._next_ticket(channel)
        self._launch(channel, ticket, label, job, apply, None, debounce)
        return ticket.generation

    def show_or_compute(
        self, channel: str, found: T | None, job: Callable[[], T], apply: Callable[[T], None]
    ) -> bool:
        """`apply(found)` at once when it was cached (dropping whatever of `channel` is in
        flight), else `compute` it. Returns True when it has to be computed."""
        if found is not None:
            self.forget(channel)
            apply(found)
            return False
        self.compute(channel, job, apply)
        return True

    def from_thread(self, channel: str, generation: int, update: Callable[..., None]) -> Callable:
        """A callable a worker thread may call: it runs `update(*args)` on the UI thread if the
        start `generation` is still the newest (for progress). Call this on the UI thread."""
        loop = asyncio.get_running_loop()

        def guarded(*args: Any, **kwargs: Any) -> None:
            if self.newest(channel) == generation:
                update(*args, **kwargs)

        return lambda *args, **kwargs: loop.call_soon_threadsafe(partial(guarded, *args, **kwargs))

    def stale(self, channel: str, generation: int) -> Callable[[], bool]:
        """A check a worker thread may call between chunks: True once a newer start came."""
        return lambda: self.newest(channel) != generation

    def _launch(
        self,
        channel: str,
        ticket: Ticket,
        label: str,
        job: Callable[[], T],
        done: Callable[[T], None],
        failed: Callable[[BaseException], None] | None,
        debounce: bool,
    ) -> None:
        self.show_error("")
        # A coroutine function, not a coroutine: an exclusive start that cancels this worker
        # before it ran leaves no never-awaited coroutine behind.
        self.run_worker(
            partial(self._compute, channel, ticket, label, job, done, failed, debounce),
            name=self._group(channel),
            group=self._group(channel),
            exclusive=True,
            exit_on_error=False,
        )

    def _current(self, channel: str, ticket: Ticket) -> bool:
        return self._tickets.get(channel) is ticket and self.is_attached

    async def _compute(
        self,
        channel: str,
        ticket: Ticket,
        label: str,
        job: Callable[[], T],
        done: Callable[[T], None],
        failed: Callable[[BaseException], None] | None,
        debounce: bool,
    ) -> None:
        if debounce:
            await asyncio.sleep(self.DEBOUNCE_S)
        timer = self.set_timer(self.BUSY_AFTER_S, partial(self._set_busy, channel, ticket, label))
        try:
            if self.LOADS_MODEL:
                await self._model_ready()
            result = await asyncio.to_thread(job)
        except Exception as exc:  # a failure is a line on screen, never a crash
            if self._current(channel, ticket):
                if failed is not None:
                    failed(exc)
                else:
                    self.show_error(f"{label[:1].upper()}{label[1:]}: {one_line(exc)}")
            return
        finally:
            ticket.finished.set()
            timer.stop()
            if self._current(channel, ticket) and self._busy_labels.pop(channel, None):
                self._say_busy()
        if not self._current(channel, ticket):
            return  # a newer start is running or has shown its result
        try:
            done(result)
        except Exception as exc:  # a display bug must not quit the app
            self.show_error(f"showing the result failed: {one_line(exc)}")

    async def _model_ready(self) -> None:
        """Return once the model is loaded (the app's `model_loaded`), the user has paused
        or the screen has stayed on screen QUIET_S (`UserQuiet`): loading numba's kernels
        holds the interpreter lock for ~1 s, and the work of a step the user only passes
        through (ctrl+n, ctrl+n, ...) would load them meanwhile, slowing each next step
        switch two- to threefold. Work on a step the user stays on asks the app's warm-up
        for the model (`want_model`) and waits for that one load: several works loading it
        in their own threads at once took the UI loop's CPU for 100-200 ms at a time."""
        from workbench.core.quiet import QUIET_S

        loaded = getattr(self.app, "model_loaded", None)
        quiet = getattr(self.app, "quiet", None)
        if loaded is None or quiet is None:
            return
        while not loaded.is_set():
            stays = quiet.user_quiet_for() >= QUIET_S or self.on_screen_for() >= QUIET_S
            if stays and not self.workbench.want_model():  # type: ignore[attr-defined]
                return  # no warm-up on its way: this work loads the model itself
            await asyncio.sleep(0.02)

    def _set_busy(self, channel: str, ticket: Ticket, label: str) -> None:
        # finished: the timer fired as the work ended, and its callback ran after the finally
        # that clears the busy line (seen under load: a stale "⟳ Running ..." for good)
        if self._current(channel, ticket) and not ticket.finished.is_set():
            self._busy_labels[channel] = label
            self._say_busy()

    def _say_busy(self) -> None:
        notes = self.query(f"#{self.BUSY_NOTE}")
        if notes:
            text = "; ".join(self._busy_labels.values())
            notes.first(Note).say(f"⟳ {text[:1].upper()}{text[1:]}…" if text else "")

    def on_unmount(self) -> None:
        for ticket in self._tickets.values():
            ticket.stop.set()  # a thread still running stops at its next checkpoint


class ComputeScreen(WorkScreen):
    """A work screen with a status line and form fields (values its actions read), which
    redraws its outputs only when the packet changed.

    Subclasses yield `compose_status()` where the status, busy and error lines go, read form
    fields with `form_value` and start work with `start_compute`.
    """

    def __init__(self, step: Any) -> None:
        super().__init__(step)
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
        yield from super().compose_status()

    def say(self, note_id: str, text: str, state: str | None = None) -> None:
        """Show `text` in note `note_id`; `state` (missing/stale/current) colours a status."""
        note = self.query_one(f"#{note_id}", Note)
        note.say(text)
        if text and note_id in PROBLEM_NOTES:  # where the user looks, not only in the form
            self.tell(text, "error")
        if state is not None:
            for name in ("missing", "stale", "current"):
                note.set_class(name == state, f"-{name}")

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
