"""The workbench app: one screen per step, a step list, autosaved drafts, remappable keys.

Domain work happens in textual-free modules (`session`, `drafts`, `form`, `facts`, `keymap`);
this module wires them to Textual. Every binding has an id (remap them in keymap.toml, see
`keymap.py`); app-wide keys are ctrl/F-keys with priority so they work while a field has focus.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from textual import events, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var
from textual.screen import ModalScreen, Screen
from textual.timer import Timer

from packets.errors import Problem, UsageError, dotted
from packets.examples import DEFAULT_EXAMPLE, example_path
from workbench.core import drafts, keys
from workbench.core.hangup import HANGUP_POLL_S, terminal_hung_up
from workbench.core.heap import collector_paused, enable_collector, freeze_heap
from workbench.core.keymap import keymap_path, load_keymap
from workbench.core.palette import PaletteCommand, WorkbenchCommands
from workbench.core.quiet import UserQuiet
from workbench.core.session import (
    WorkingPacket,
    apply_edit,
    changed_fields,
    disk_sha256,
    save_packet,
    set_pending,
)
from workbench.core.stall import StallMonitor
from workbench.core.steps import Progress, Step, import_screen, screen_class, screen_imported
from workbench.core.theming import apply_theme, load_themes
from workbench.lab.engine import Lab, is_serving, subject

from .screens.base import StepScreen
from .screens.modals import DraftQuestion, HelpScreen, RecoverScreen
from .screens.registry import default_steps
from .widgets.step_list import StepRow

REVEAL_WITHIN_S = 1.0  # a first visit's screen shows after this even if not mounted yet
EXIT_GRACE_S = 3.0  # after a hangup, leave this long for a clean exit, then exit regardless
WEDGED_EXIT_S = 10.0  # a SIGHUP or SIGTERM the UI loop has not taken up by then: exit anyway
DRAFT_DELAY_S = 0.3  # autosave once typing pauses this long (a hangup or quit saves at once)
DRAFT_EXIT_WAIT_S = 30.0  # at exit, how long a background draft write may still take
USER_EVENTS = (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)
WARM_UP_AFTER_S = 0.3  # after the first frame: loading numba then would delay that frame


ANIMATIONS_VARIABLE = "TEXTUAL_ANIMATIONS"
"""Textual's setting for animations ("none", "basic", "full"). The workbench runs without them
unless it is set: a field scrolled into view by Tab glided there in 3-10 frames, each a
repaint of the form (Tab on the Packet step at 80x24: p90 120-140 ms of the UI thread's CPU
on a slow host, 56-71 ms without), and over SSH each frame is sent whole."""


@dataclass(frozen=True)
class WorkbenchOptions:
    """How the app runs.

    Attributes:
        theme: theme name from themes/ (None: the default theme).
        drafts_folder: where drafts are kept (None: $XDG_STATE_HOME/handoff-workbench/drafts).
        keymap_file: the keymap file (None: $XDG_CONFIG_HOME/handoff-workbench/keymap.toml).
        stall_report: write event-loop lag statistics (JSON) here on exit (None: no monitor).
        steps: the step list (None: `steps.default_steps()`).
    """

    theme: str | None = None
    drafts_folder: Path | None = None
    keymap_file: Path | None = None
    stall_report: Path | None = None
    steps: tuple[Step, ...] | None = field(default=None, compare=False)


class WorkbenchApp(App[int]):
    """Steps through a handoff packet; edits are checked as a packet file is, and autosaved."""

    # Absolute: subclasses may live anywhere. All loaded at start: a stylesheet added when a
    # screen first mounts restyles every widget of every screen.
    CSS_PATH: ClassVar = [
        Path(__file__).parent / "app.tcss",
        Path(__file__).parent / "screens" / "review.tcss",
        Path(__file__).parent / "screens" / "lab.tcss",
    ]
    TITLE = "handoff-workbench"
    COMMANDS: ClassVar = {WorkbenchCommands}
    HORIZONTAL_BREAKPOINTS: ClassVar = [(0, "-compact"), (120, "-wide")]
    # The footer shows what fits in 80 columns with a step's own keys; back, palette and theme
    # are listed by f1 (help) and ctrl+p (palette).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "next_step", "Next", id="next-step", priority=True),
        Binding("ctrl+o", "previous_step", "Back", id="previous-step", priority=True, show=False),
        Binding("ctrl+s", "save", "Save", id="save", priority=True),
        Binding("f1", "help", "Help", id="help", priority=True),
        Binding("question_mark", "help", "Help", id="help-question", show=False),
        Binding(
            "ctrl+p", "command_palette", "Palette", id="command-palette", priority=True, show=False
        ),
        Binding("ctrl+t", "cycle_theme", "Theme", id="cycle-theme", priority=True, show=False),
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
        # Plain q quits too, but only where no text field takes the key (like `?` for help).
        Binding("q", "quit", "Quit", id="quit-q", show=False),
    ]

    working: var[WorkingPacket] = var(None, always_update=False)  # type: ignore[arg-type]
    """The packet under edit (replaced, never mutated, on every accepted edit)."""
    left: var[frozenset[str]] = var(frozenset())
    """Ids of the steps the user has been through and moved on from."""
    current_step: var[str] = var("")
    """Id of the step on screen."""

    def __init__(self, working: WorkingPacket, options: WorkbenchOptions | None = None) -> None:
        super().__init__()
        if ANIMATIONS_VARIABLE not in os.environ:  # the user's choice, when made, stands
            self.animation_level = "none"
        self.options = options or WorkbenchOptions()
        self.steps: tuple[Step, ...] = self.options.steps or default_steps()
        self.drafts_folder = self.options.drafts_folder or drafts.drafts_dir()
        self.keymap_file = self.options.keymap_file or keymap_path()
        self.set_reactive(WorkbenchApp.working, working)
        self.draft_settled = False
        """False while an earlier draft awaits the user's decision: nothing may overwrite it."""
        self.lab = Lab()
        """Model results shared by the Baseline, Diagnose and Tune steps (cached by inputs)."""
        self.exit_notes: dict[str, str] = {}
        """Lines for the command line to print after exit (where unsaved edits were kept...)."""
        self._startup_warnings: list[str] = []
        self._overwrite_armed: str | None = None  # SHA-256 of the changed file ctrl+s may replace
        self._exit_deadline: threading.Timer | None = None
        self._wedged_deadline: threading.Timer | None = None  # see `_on_signal`
        self._previous_handlers: dict[int, Any] = {}
        self._draft_timer: Timer | None = None
        self._drafts = drafts.DraftWriter(self._draft_written_in_thread)
        self._drafts.start()  # before the app runs: see DraftWriter (the lock, sys.stderr)
        self._draft_reported = 0  # generation of the last draft outcome reported
        self._stall_monitor = StallMonitor() if self.options.stall_report else None
        self.model_loaded = threading.Event()
        """Set once the start-up warm-up has imported the model and loaded its numba kernels
        (or gave up): work that steps start on their own waits for it or a pause."""
        self.model_wanted = threading.Event()
        """Set when a step's own work needs the model now (`want_model`): the warm-up stops
        waiting for a pause."""
        self._warming = False  # the warm-up worker has started and not finished
        self.quiet = UserQuiet()
        """When the user last pressed a key, clicked or switched steps: start-up work in
        threads waits for a pause (`UserQuiet.wait`), so a step switch keeps the UI thread."""
        self._switching = False  # inside goto_step's switch_mode (`delay_update`)
        self._importing_step: str | None = None  # a step shown once its module imports
        self._held: StepScreen | None = None  # the first visit updates are held for
        self.step_screens: dict[str, StepScreen] = {}
        """The step screens built so far, by step id (each is built once, on its first visit,
        and kept: its mode's screen)."""
        for step in self.steps:
            self.add_mode(step.id, partial(self._build_step_screen, step))
        for number, step in enumerate(self.steps[:9], start=1):
            # Jump keys come from the step list, so they are added per instance (with ids).
            jump = Binding(
                str(number), f"goto_step('{step.id}')", step.title, show=False, id=f"goto-{step.id}"
            )
            self._bindings.key_to_bindings.setdefault(jump.key, []).append(jump)
        themes = load_themes()
        for theme in themes.themes:
            self.register_theme(theme)
        self._startup_warnings += themes.warnings
        warning = apply_theme(self, self.options.theme)
        if warning:
            self._startup_warnings.append(warning)

    def refresh_css(self, animate: bool = True) -> None:
        """Restyle for new CSS variables (a new theme); before anything is styled, only set them.

        The theme set in `__init__` has Textual refresh the CSS as the app starts, before a
        single widget is registered: a parse of every stylesheet (~12 ms on a slow host) into a
        copy that is thrown away, since the first screen's registration parses them again.
        With nothing styled yet, new variables are all the refresh has to bring: the first
        style applied parses with them (the theme snapshots at 80x24 check the result).
        """
        if not self._registry:
            self.stylesheet.set_variables(self.get_css_variables())
            return
        super().refresh_css(animate)

    # --- lifecycle -------------------------------------------------------------------------

    def _build_step_screen(self, step: Step) -> Screen:
        """A step's screen, the first time its mode is shown (kept in `step_screens`)."""
        screen = step.screen(step)
        if isinstance(screen, StepScreen):
            self.step_screens[step.id] = screen
        return screen

    def on_mount(self) -> None:
        def known_ids() -> Iterator[str]:  # read only when a keymap file exists: the ids
            yield from self.binding_ids()  # need every step's screen class imported

        loaded = load_keymap(self.keymap_file, known_ids())
        if loaded.keymap:
            self.set_keymap(loaded.keymap)
        if loaded.warning:
            self._startup_warnings.append(loaded.warning)
        self._install_signal_handlers()
        if not self.is_headless:
            self.set_interval(HANGUP_POLL_S, self._check_hangup, name="hangup-poll")
        if self._stall_monitor is not None:
            self.run_worker(self._stall_monitor.run(), name="stall-monitor", exit_on_error=False)
        self._show_step(self.steps[0].id)  # imported here: the first frame is this step's
        self._update_subtitle()
        for warning in self._startup_warnings:
            self.notify(warning, severity="warning", timeout=10)
        self._offer_draft()
        self.set_timer(WARM_UP_AFTER_S, self._warm_up_lab)
        self.call_after_refresh(self._started)

    def _started(self) -> None:
        """After the first frame: what start-up built is frozen out of garbage-collector
        scans, and the collector (off during start-up, see `workbench.entry`) runs again; the
        other steps' screen modules are imported in a thread; the stall monitor's statistics
        start here (`StallMonitor.first_frame`)."""
        if self._stall_monitor is not None:
            self._stall_monitor.first_frame()
        freeze_heap()
        enable_collector()
        self.run_worker(self._load_screens, name="load-screens", thread=True, exit_on_error=False)

    def _load_screens(self) -> None:
        """Import every step's screen module and what it imports on first use
        (`StepScreen.preload`), off the UI thread: the first frame needs only the first
        step's, and a first visit then finds its modules loaded. One step's modules at a
        time, each once the user pauses (`quiet`): a step asked for meanwhile is imported on a
        thread of its own (`_import_step`) rather than waiting behind this one."""
        for step in self.steps:
            if not self.quiet.wait():
                return
            with collector_paused():
                import_screen(step)

    def _warm_up_lab(self) -> None:
        """After the first frame: load the model and its numba kernels and run the baseline in
        the background, so the first step that needs them does not wait."""
        working = self.working

        def warm() -> None:
            # Each piece once the user pauses (`quiet`): a step switch meanwhile keeps the
            # interpreter lock. Steps' own work waits for this (or a pause), `_model_ready`.
            wanted = self.model_wanted
            try:
                if not self.quiet.wait(until=wanted):
                    return
                with collector_paused():
                    import workbench.widgets.charts  # noqa: F401  (plotext, off the UI thread)

                if not self.quiet.wait(until=wanted):
                    return
                with collector_paused():
                    self.lab.warm_up()
            finally:
                self.model_loaded.set()
                self._warming = False
            base = subject(working)
            if not self.quiet.wait(until=wanted):
                return
            self.lab.run(base)
            if is_serving(base):  # what a serving packet's Baseline step shows
                self.lab.serving_run(base)
            with contextlib.suppress(RuntimeError):  # the app may have exited meanwhile
                self.call_from_thread(self._lab_warmed_up)

        self._warming = True
        self.run_worker(warm, name="lab-warm-up", thread=True, exit_on_error=False)

    def want_model(self) -> bool:
        """A step's work needs the model now: the warm-up loads it without waiting for a
        pause. False when no warm-up is on its way (the work loads the model itself)."""
        if self.model_loaded.is_set() or not self._warming:
            return False
        self.model_wanted.set()
        return True

    def _lab_warmed_up(self) -> None:
        self._refresh_step_marks()
        freeze_heap()

    def _refresh_step_marks(self) -> None:
        """Re-evaluate the done marks of the step on screen (a result has just arrived)."""
        refresh = getattr(self.screen, "refresh_steps", None)
        if refresh is not None:
            refresh()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, USER_EVENTS):
            self.quiet.touch()  # the user is at work: start-up threads wait (`quiet`)
        await super().on_event(event)

    def on_unmount(self) -> None:
        self.quiet.closed.set()  # start-up threads waiting for a pause stop
        if not self._drafts.wait(DRAFT_EXIT_WAIT_S):
            self.exit_notes["draft"] = f"draft still being written after {DRAFT_EXIT_WAIT_S:g} s"
        elif self._drafts.last_outcome is not None:
            self._report_draft(self._drafts.last_outcome, notify=False)  # the exit notes say it
        self._drafts.close()
        gc.unfreeze()  # what freeze_heap kept may be collected again (apps run in one process)
        self._remove_signal_handlers()
        if self._stall_monitor is not None and self.options.stall_report:
            try:
                self._stall_monitor.write_report(self.options.stall_report)
            except UsageError as exc:
                self.exit_notes["stall"] = f"stall report not written: {exc}"

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGHUP, signal.SIGTERM):
            with contextlib.suppress(ValueError, OSError):
                previous = signal.signal(signum, partial(self._on_signal, loop))
                self._previous_handlers[signum] = previous

    def _remove_signal_handlers(self) -> None:
        for signum, previous in self._previous_handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, previous)
        self._previous_handlers.clear()

    def _on_signal(self, loop: asyncio.AbstractEventLoop, signum: int, _frame: Any) -> None:
        """SIGHUP or SIGTERM, as Python runs a signal handler: on the main thread, between two
        of its bytecodes, so also while the UI loop is stuck in a handler that never returns
        (asyncio's `add_signal_handler` only queues the signal for the loop, which then never
        takes it up: such an app outlived its terminal, spinning on a core for as long as
        nobody killed it). The loop is asked to save the draft and exit (`_on_terminate`);
        if it has not begun to within WEDGED_EXIT_S, the process exits regardless."""
        if self._wedged_deadline is None:
            self._wedged_deadline = threading.Timer(WEDGED_EXIT_S, os._exit, args=(128 + signum,))
            self._wedged_deadline.daemon = True
            self._wedged_deadline.start()
        with contextlib.suppress(RuntimeError):  # the loop has closed: the app is exiting
            loop.call_soon_threadsafe(self._on_terminate, signum)

    def _check_hangup(self) -> None:
        """Treat a hung-up terminal as SIGHUP (see `workbench.core.hangup`: no signal may come)."""
        fd = getattr(self._driver, "fileno", None)
        if isinstance(fd, int) and self._exit_deadline is None and terminal_hung_up(fd):
            self._on_terminate(signal.SIGHUP)

    def _on_terminate(self, signum: int) -> None:
        """SIGHUP (the terminal or SSH link is gone) or SIGTERM: save the draft, then exit."""
        if self._wedged_deadline is not None:
            self._wedged_deadline.cancel()  # the loop answers: the grace below takes over
        self.save_draft_now()
        if not self.is_headless and self._exit_deadline is None:
            # A dead terminal can stall the driver's restore writes: exit regardless after a
            # grace period (cancelled in `run` once the app has exited on its own).
            self._exit_deadline = threading.Timer(EXIT_GRACE_S, os._exit, args=(128 + signum,))
            self._exit_deadline.daemon = True
            self._exit_deadline.start()
        self.exit(return_code=128 + signum)

    def run(self, *args: Any, **kwargs: Any) -> int | None:
        """Run the app (see `App.run`); pending hangup deadlines are cancelled on return."""
        try:
            return super().run(*args, **kwargs)
        finally:
            for deadline in (self._exit_deadline, self._wedged_deadline):
                if deadline is not None:
                    deadline.cancel()

    # --- drafts ----------------------------------------------------------------------------

    class DraftWritten(Message):
        """A background draft write finished (posted from the writer thread)."""

        def __init__(self, outcome: drafts.DraftOutcome) -> None:
            super().__init__()
            self.outcome = outcome

    def schedule_draft(self) -> None:
        """Autosave the draft DRAFT_DELAY_S from now (a burst of keystrokes writes once)."""
        if self._draft_timer is None:
            self._draft_timer = self.set_timer(DRAFT_DELAY_S, self.save_draft_soon)

    def _draft_due(self) -> bool:
        """Stop a pending autosave timer; True when the draft may be written now."""
        if self._draft_timer is not None:
            self._draft_timer.stop()
            self._draft_timer = None
        return self.draft_settled and self.working.source is not None

    def save_draft_soon(self) -> None:
        """Write the draft (or remove it) on the draft writer's thread: the autosave and step
        switches, where the UI loop must not wait on the disk (`drafts.DraftWriter`)."""
        if self._draft_due():
            self._drafts.submit(self.working, self.drafts_folder)

    def save_draft_now(self) -> None:
        """Write the draft for the current packet (or remove it when nothing is unsaved) before
        returning: quit, hangup, save. A background write still in flight finishes first."""
        if self._draft_due():
            self._report_draft(self._drafts.write_now(self.working, self.drafts_folder))

    def wait_for_drafts(self, timeout: float | None = None) -> bool:
        """Block until no background draft write is waiting or in flight (tests; False if
        `timeout` seconds ran out). Its outcome is reported once the UI loop runs again."""
        return self._drafts.wait(timeout)

    def _draft_written_in_thread(self, outcome: drafts.DraftOutcome) -> None:
        self.post_message(self.DraftWritten(outcome))  # thread-safe; dropped once exited

    def on_workbench_app_draft_written(self, message: DraftWritten) -> None:
        self._report_draft(message.outcome)

    def _report_draft(self, outcome: drafts.DraftOutcome, notify: bool = True) -> None:
        """Say what a draft write did, unless a later write has been reported already."""
        if outcome.generation < self._draft_reported:
            return
        self._draft_reported = outcome.generation
        if outcome.error is not None:
            message = f"draft not saved: {outcome.error}"
            if notify and self.exit_notes.get("draft") != message:  # once, not every keystroke
                self.notify(message, severity="error", timeout=10)
            self.exit_notes["draft"] = message
        elif outcome.path:
            self.exit_notes["draft"] = (
                f"unsaved edits kept in the draft {outcome.path}; reopen the packet to recover them"
            )
        else:
            self.exit_notes.pop("draft", None)

    def _offer_draft(self) -> None:
        working = self.working
        if working.source is None:
            self.draft_settled = True
            return
        try:
            found = drafts.read_draft(working.source, self.drafts_folder)
        except UsageError as exc:  # draft_settled stays False: nothing overwrites that file
            self.notify(f"{exc}; autosave is off until it is fixed", severity="error", timeout=15)
            return
        if isinstance(found, drafts.CorruptDraft):
            self.notify(str(found), severity="warning", timeout=15)
        if not isinstance(found, drafts.Draft) or (
            found.working.packet == working.packet and not found.working.pending
        ):
            if isinstance(found, drafts.Draft):
                drafts.remove_draft(found.path)  # it holds nothing the file does not
            self.draft_settled = True
            return
        question = DraftQuestion(
            packet_path=str(working.source),
            draft_path=str(found.path),
            changes=tuple(changed_fields(working.packet, found.working.packet)),
            pending=tuple(sorted(found.working.pending.items())),
            file_changed=disk_sha256(working) != found.started_from_sha256,
        )
        self.push_screen(RecoverScreen(question), partial(self._draft_decided, found))

    def _draft_decided(self, draft: drafts.Draft, choice: str | None) -> None:
        try:
            if choice == "recover":
                self.working = drafts.recover(draft, self.working)
                self.tell("Draft recovered: its edits are unsaved until ctrl+s")
            elif choice == "discard":
                drafts.remove_draft(draft.path)
                self.tell("Draft discarded")
            else:
                target = drafts.keep_both(draft, draft.working.source, self._writable_folder())
                self.tell(f"Draft kept as {target}")
        except (UsageError, OSError) as exc:
            self.tell(f"draft left in place: {exc}", "error")
            return  # draft_settled stays False: nothing overwrites it this session
        self.draft_settled = True
        self.save_draft_now()

    def _writable_folder(self) -> Path | None:
        """Where new files go: beside the packet, or the current folder for a shipped example."""
        return Path.cwd() if self.is_shipped_example() else None

    def is_shipped_example(self) -> bool:
        """True when the packet is one of the examples installed with the workbench."""
        source = self.working.source
        shipped = Path(example_path(DEFAULT_EXAMPLE)).resolve().parent
        return source is not None and source.parent == shipped

    # --- edits -----------------------------------------------------------------------------

    def edit(self, path: tuple[str | int, ...], value: object, text: str) -> Problem | None:
        """Apply an edit to the packet; on refusal keep `text` as pending and return why."""
        result = apply_edit(self.working, path, value)
        if isinstance(result, Problem):
            self.working = set_pending(self.working, path, text)
            return result
        self.working = result
        return None

    def check_edit(self, path: tuple[str | int, ...], value: object) -> Problem | None:
        """Why an edit would be refused (None when it would be applied); changes nothing."""
        result = apply_edit(self.working, path, value)
        return result if isinstance(result, Problem) else None

    def keep_typed(self, path: tuple[str | int, ...], text: str | None) -> None:
        """Remember text typed but not applied (None: there is none), so the draft keeps it."""
        if self.working.pending.get(dotted(path)) != text:
            self.working = set_pending(self.working, path, text)

    def watch_working(self, working: WorkingPacket) -> None:
        self.schedule_draft()
        self._update_subtitle()

    def _update_subtitle(self) -> None:
        working = self.working
        marks = []
        if working.dirty:
            marks.append("● unsaved")
        if working.pending:
            marks.append(f"{len(working.pending)} not applied")
        self.sub_title = "  ".join([working.packet.id, *marks])

    # --- steps -----------------------------------------------------------------------------

    def step_number(self, step_id: str) -> int:
        """1-based position of a step."""
        return next(i for i, step in enumerate(self.steps, start=1) if step.id == step_id)

    def step_rows(self) -> list[StepRow]:
        """What the step list shows, with each step's done-predicate evaluated now."""
        progress = Progress(self.working, self.left, self.lab)
        return [
            StepRow(step.id, number, step.title, step.done(progress))
            for number, step in enumerate(self.steps, start=1)
        ]

    def goto_step(self, step_id: str) -> None:
        """Show step `step_id` (the one being left counts as visited).

        A step whose screen module is not imported yet (the user was faster than the start-up
        thread that imports them, `_load_screens`) is shown once a thread has imported it
        (`_import_step`): a first visit of Baseline imports numpy, the charts and the lab's
        views, 100-130 ms on the UI thread, held in one piece. Meanwhile the UI keeps
        running, and the last step asked for is the one shown."""
        if step_id not in self._modes:
            return
        step = next(s for s in self.steps if s.id == step_id)
        if step_id not in self.step_screens and not screen_imported(step):
            self._importing_step = step_id
            self.quiet.touch()
            self._import_step(step)
            return
        self._show_step(step_id)

    def _show_step(self, step_id: str) -> None:
        """Switch to step `step_id`'s mode (building its screen on a first visit)."""
        self._importing_step = None
        if step_id == self.current_step:
            return
        if self.current_step:
            self.left = self.left | {self.current_step}
            self.save_draft_soon()
        self.current_step = step_id
        self.quiet.touch()
        first_visit = step_id not in self.step_screens
        self._switching = True
        try:
            self.switch_mode(step_id)
        finally:
            self._switching = False
        if first_visit and step_id in self.step_screens and self._held is None:
            self._hold_updates(self.step_screens[step_id])

    def delay_update(self, delay: float = 0.05) -> None:
        """Textual's switch_mode holds every update for `delay` to hide a screen still being
        built; a step switch holds them instead until the new step's screen has mounted
        (`_hold_updates`), and a return, whose screen is built, shows at once."""
        if not self._switching:
            super().delay_update(delay)

    def _hold_updates(self, screen: StepScreen) -> None:
        """Hold screen updates until `screen` (a first visit's, being built) has mounted and
        shown its packet (`reveal`), or REVEAL_WITHIN_S at most: the first frame shows the
        whole screen, as soon as it is ready (not a fixed 50 ms later, nor part of it)."""
        self._held = screen
        self._begin_batch()  # Textual's own hold (what delay_update and batch_update use)
        self.set_timer(REVEAL_WITHIN_S, partial(self.reveal, screen), name="reveal-step")

    def reveal(self, screen: StepScreen) -> None:
        """Let updates through again if they are held for `screen` (its mount calls this)."""
        if self._held is screen:
            self._held = None
            self._end_batch()
            if not self._batch_count:
                self.screen.refresh()

    @work(thread=True, exclusive=True, group="import-step", exit_on_error=False)
    def _import_step(self, step: Step) -> None:
        """Import a step's screen module and what it imports on first use, then show the step
        if it is still the one asked for (a later key may have chosen another)."""
        try:
            with collector_paused():
                import_screen(step)
        finally:  # a failed import is raised again on the UI thread, by the switch itself
            with contextlib.suppress(RuntimeError):  # the app may have exited meanwhile
                self.call_from_thread(self._step_imported, step)

    def _step_imported(self, step: Step) -> None:
        if self._importing_step != step.id:
            return  # stale: another step was asked for meanwhile
        self._importing_step = None
        if isinstance(self.screen, ModalScreen):
            return  # a dialog opened meanwhile: step keys are off under it
        self._show_step(step.id)  # (a failed import fails again here, as a switch would)

    def _step_offset(self, offset: int) -> None:
        ids = [step.id for step in self.steps]
        index = ids.index(self._importing_step or self.current_step) + offset
        if 0 <= index < len(ids):
            self.goto_step(ids[index])

    def action_next_step(self) -> None:
        """Go to the next step."""
        self._step_offset(1)

    def action_previous_step(self) -> None:
        """Go to the previous step."""
        self._step_offset(-1)

    def action_goto_step(self, step_id: str) -> None:
        """Go to a step by id."""
        self.goto_step(step_id)

    NAVIGATION_ACTIONS = frozenset({"next_step", "previous_step", "goto_step", "save"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Step keys and save do nothing while a dialog is open."""
        return not (isinstance(self.screen, ModalScreen) and action in self.NAVIGATION_ACTIONS)

    # --- other actions ---------------------------------------------------------------------

    def tell(self, text: str, severity: str = "information") -> None:
        """Show an action's result in the status line of the step on screen (under a dialog:
        the step beneath it), or as a notification where no step is on screen."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, StepScreen) and screen.is_mounted:
                screen.tell(text, severity)
                return
        self.notify(text, severity=severity)  # type: ignore[arg-type]

    def action_save(self) -> None:
        """Write the packet file (canonical bytes, atomic); the draft is then removed."""
        if self.is_shipped_example():
            self.action_save_as()
            return
        on_disk = disk_sha256(self.working) or "missing or unreadable"
        if on_disk != self.working.source_sha256 and on_disk != self._overwrite_armed:
            self._overwrite_armed = on_disk
            self.tell(
                "The packet file changed on disk since it was opened: ctrl+s again overwrites it",
                "warning",
            )
            return
        confirmed, self._overwrite_armed = self._overwrite_armed, None
        self._write(None, overwrite_sha256=confirmed)

    def _write(self, path: Path | None, overwrite_sha256: str | None = None) -> bool:
        """Save the packet to its file (or to `path`, which then becomes its file);
        `overwrite_sha256`: the changed file version the user agreed to overwrite."""
        try:
            self.working = save_packet(self.working, path, overwrite_sha256=overwrite_sha256)
        except UsageError as exc:
            self.tell(str(exc), "error")
            return False
        self.save_draft_now()
        pending = len(self.working.pending)
        note = f" ({pending} refused field(s) not included)" if pending else ""
        self.tell(f"Saved {self.working.source}{note}")
        return True

    def action_save_as(self) -> None:
        """Write a copy of the packet to a new file and go on editing that copy (a shipped
        example cannot be saved in place)."""
        from .screens.modals import SaveAsScreen

        shipped = self.is_shipped_example()
        default = Path.cwd() / f"{self.working.packet.id}.yaml" if shipped else None
        reason = (
            "This is a shipped example: it cannot be saved in place. Save a copy to edit:"
            if shipped
            else "Write the packet to a new file and go on editing that copy:"
        )
        self.push_screen(SaveAsScreen(reason, str(default or "")), self._save_as_chosen)

    def _save_as_chosen(self, target: str | None) -> None:
        if not target:
            self.tell("Not saved (save-as cancelled); edits stay in the draft", "warning")
            return
        try:
            path = Path(target).expanduser()
            taken = path.exists()
        except (OSError, ValueError, RuntimeError) as exc:  # a NUL byte, an unknown ~user
            self.tell(f"not saved: {target!r} is not a usable path ({exc})", "error")
            return
        if taken:
            self.tell(f"not saved: {path} exists (choose a new file name)", "error")
            return
        old_source = self.working.source
        if self._write(path) and old_source is not None and old_source != self.working.source:
            # The draft belonged to the file left behind: it is now saved in the copy.
            with contextlib.suppress(UsageError):
                drafts.remove_draft(drafts.draft_path(old_source, self.drafts_folder))

    def action_help(self) -> None:
        """Show every key."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_rows(), str(self.keymap_file)))

    def workbench_themes(self) -> list[str]:
        """Names of the themes shipped in themes/."""
        return sorted(n for n in self.available_themes if n.startswith("workbench-"))

    def action_cycle_theme(self) -> None:
        """Switch to the next workbench theme."""
        names = self.workbench_themes()
        index = names.index(self.theme) + 1 if self.theme in names else 0
        self.set_theme(names[index % len(names)])

    def set_theme(self, name: str) -> None:
        """Apply theme `name` (falling back cleanly when it does not exist)."""
        warning = apply_theme(self, name)
        if warning:
            self.tell(warning, "warning")

    def unsaved_work(self) -> list[str]:
        """What quitting now would leave unsaved: edits not written to the file, text typed
        but refused, and each step's own unsaved work (the Tune working configuration), on
        screen or not."""
        working = self.working
        found = []
        if working.dirty:
            found.append("edits not saved to the file (ctrl+s)")
        if working.pending:
            found.append(f"{len(working.pending)} field(s) typed but not applied")
        for screen in self.step_screens.values():
            found += screen.unsaved_work()
        return found

    def action_quit(self) -> None:  # type: ignore[override]
        """Leave the app, after asking when something is unsaved (edits stay in the draft)."""
        from .screens.confirm import ConfirmScreen

        if isinstance(self.screen, ConfirmScreen):
            return
        unsaved = self.unsaved_work()
        if not unsaved:
            self._quit(True)
            return
        question = (
            "Not saved: " + "; ".join(unsaved) + ". Edits to the packet stay in the draft and "
            "are offered when it is reopened. Quit anyway?"
        )
        self.push_screen(ConfirmScreen("Quit with unsaved work?", question), self._quit)

    def _quit(self, yes: bool | None) -> None:
        if not yes:
            self.tell("Not quit: carry on (ctrl+s saves)")
            return
        if self._stall_monitor is not None:
            self._stall_monitor.quitting()  # what follows is the exit, timed apart
        self.save_draft_now()
        self.exit(0)

    # --- bindings, help and palette (generated from the bindings: workbench/core/keys.py) -------

    def key_owners(self) -> list[keys.KeyOwner]:
        """Every place the workbench defines keys, named for the help screen (imports every
        step's screen class)."""
        from .screens.confirm import ConfirmScreen
        from .widgets.field_editor import ChoiceField, FieldEditor
        from .widgets.number_field import NumberField

        jumps = [
            b
            for bindings in self._bindings.key_to_bindings.values()
            for b in bindings
            if b.id and b.id.startswith("goto-")
        ]
        screens = [(step.title, screen_class(step)) for step in self.steps]
        return [
            keys.KeyOwner("everywhere", tuple(self.BINDINGS)),
            keys.KeyOwner("everywhere", tuple(jumps)),
            keys.KeyOwner("step screens", tuple(StepScreen.BINDINGS)),
            keys.KeyOwner("fields", tuple(FieldEditor.BINDINGS)),
            keys.KeyOwner("number fields", tuple(NumberField.BINDINGS)),
            keys.KeyOwner("choice fields", tuple(ChoiceField.BINDINGS)),
            *keys.step_screen_owners([(t, c) for t, c in screens if c is not None], StepScreen),
            keys.KeyOwner("help", tuple(HelpScreen.BINDINGS)),
            keys.KeyOwner("draft dialog", tuple(RecoverScreen.BINDINGS)),
            keys.KeyOwner("confirm dialog", tuple(ConfirmScreen.BINDINGS)),
        ]

    def binding_ids(self) -> list[str]:
        """Every binding id a keymap may remap."""
        return keys.binding_ids(self.key_owners())

    def help_rows(self) -> list[keys.KeyRow]:
        """The help screen's table, keymap applied."""
        return keys.help_rows(self, self.key_owners())

    def palette_commands(self, screen: Screen) -> list[PaletteCommand]:
        """Palette entries for `screen`: actions, steps, themes."""
        return keys.palette_commands(self, screen)
