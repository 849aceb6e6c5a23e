"""StepScreen: the frame every step shares (header, step list, heading, footer)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import OptionList, Static

from workbench.core.heap import freeze_heap
from workbench.core.session import WorkingPacket
from workbench.widgets.footer import Footer
from workbench.widgets.header import Header
from workbench.widgets.note import Note
from workbench.widgets.step_list import StepList

from .layout import LayoutOnceScreen

if TYPE_CHECKING:
    from textual.css.query import QueryType

    from workbench.app import WorkbenchApp
    from workbench.core.steps import Step
    from workbench.widgets.field_editor import FieldEditor


PIECE_QUIET_S = 0.2
"""`mount_later` pieces wait until the user has not pressed a key for this long (seconds):
longer than the gap between keys typed or held (Tab, arrows, a field's text: 30-150 ms), short
enough that the rest of a form is in before the eye gets to it."""


class StepScreen(LayoutOnceScreen):
    """A step's screen. Subclasses yield their content from `compose_main` and update it in
    `show_packet`, which runs on mount, on every packet change, and when the screen returns.
    What the first frame does not show (form sections below the fold) they hand to
    `mount_later`: it mounts right after that frame, so a first visit does not wait for it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "focus_steps", "Step list", id="focus-steps", show=False),
    ]

    def __init__(self, step: Step) -> None:
        super().__init__(id=f"step-{step.id}")
        self.step = step
        self._shown: WorkingPacket | None = None
        # Start with the breakpoint class the first resize will set: restyling every widget
        # when it arrives is most of a large screen's start-up time.
        breakpoints = self.app.HORIZONTAL_BREAKPOINTS or []
        self.add_class(*self._get_breakpoint_classes(self.app.size.width, breakpoints))
        # Each widget is styled as it mounts, with the stylesheet as it is now, yet Textual
        # counts a new screen as out of date (its CSS update count starts at -1): on its first
        # show it re-parsed every stylesheet twice and restyled both the outgoing and the
        # incoming screen, most of a step's first visit (~150 ms leaving the Packet step).
        # Counted current, it skips that; a theme change while it is off screen bumps the
        # app's count, so it is still restyled when it returns.
        self._css_update_count = getattr(self.app, "_css_update_count", -1)
        self._styled_for = self._style_inputs()
        self._later: list[tuple[Widget | str, Callable[[], list[Widget]]]] = []
        self._mounting = False  # a piece of `_later` is being mounted
        self._next_scheduled = False  # a `_mount_next` waits for the next refresh
        self._unplaced = 0  # pieces mounted and not laid out yet
        self._shown_at = time.monotonic()  # when the screen was last shown (`on_screen_for`)
        self._later_root: Widget | None = None  # where the pieces go (the first parent given)
        self._framed = False  # a frame of this screen has gone to the terminal

    @classmethod
    def preload(cls) -> None:
        """Import the modules this screen imports where it first uses them (the app calls it
        off the UI thread after the first frame, so a first visit does not wait for them)."""

    @property
    def workbench(self) -> WorkbenchApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield Header(icon="≡")
        with Horizontal(id="body"):
            yield StepList(id="step-list")
            with Vertical(id="main"):
                number = self.workbench.step_number(self.step.id)
                yield Static(f"{number} · {self.step.title}", classes="step-title")
                yield Static(self.step.purpose, classes="step-purpose")
                yield from self.compose_main()
        # Each action's result, above the footer where the eye already is (not in a toast
        # over the content, nor in a note scrolled out of view); it wraps rather than cuts.
        yield Note(id="status-line")
        yield Footer(compact=True, show_command_palette=False)

    def compose_main(self) -> ComposeResult:
        """The step's own content."""
        yield from ()

    def show_packet(self, working: WorkingPacket) -> None:
        """Bring the content up to date with `working`."""

    def on_screen_for(self) -> float:
        """Seconds since the screen was last shown (0 while it is off screen)."""
        return time.monotonic() - self._shown_at if self.is_current else 0.0

    def on_mount(self) -> None:
        self._shown_at = time.monotonic()
        self.watch(self.workbench, "working", self._packet_changed, init=False)
        self.watch(self.workbench, "left", self._steps_changed, init=False)
        self._bring_up_to_date()
        # Runs after the subclasses' on_mount (Textual calls each class's, most derived
        # first): the screen is whole and shows its packet, so its first frame may go out.
        reveal = getattr(self.app, "reveal", None)
        if reveal is not None:
            reveal(self)
        # The screen's widgets live as long as the app: out of later collections' scans
        # (a full collection over the widgets of the steps visited so far was a 26-49 ms
        # stall of the UI loop in the tmux walk, on top of the handler it ran in).
        self.call_after_refresh(freeze_heap)

    def mount_later(self, parent: Widget | str, build: Callable[[], list[Widget]]) -> None:
        """Mount the widgets `build()` makes (called then, so they show the state of that
        moment) at the end of `parent` (a widget, or a selector for one an earlier piece
        mounts), after the frame on screen; pieces handed in one after another mount in
        order, one per refresh, and only while the screen is on screen: a step left before
        its pieces are all in (ctrl+n right after its first frame) pauses them, so the next
        step's first visit does not wait behind them, and they go on when it returns. Keep
        each piece small (~30 ms of mounting, a key waits for at most one). While keys come
        in (less than PIECE_QUIET_S apart) pieces wait: each piece lays out the whole screen
        again (60-140 ms under load on a long form, a stall of every key typed meanwhile). A
        Tab between pieces moves among the fields mounted so far, and a Tab that would leave
        them mounts the next piece first (`focus_next`)."""
        if self._later_root is None and isinstance(parent, Widget):
            self._later_root = parent
        self._later.append((parent, build))
        self._schedule_next()

    def _schedule_next(self) -> None:
        """Mount the next piece after the next refresh (one such call waits at a time), the
        first once the screen's first frame has gone out (`_compositor_refresh`)."""
        if self._later and not self._next_scheduled and self._framed:
            self._next_scheduled = True
            self.call_after_refresh(self._mount_next)

    @property
    def mounting_later(self) -> bool:
        """True while pieces handed to `mount_later` wait to be mounted."""
        return bool(self._later)

    async def _mount_next(self) -> None:
        self._next_scheduled = False
        if not self._later or self._mounting:
            return
        if not self.is_attached or self.app._exit:  # quitting already
            self._later.clear()
            return
        if not self.is_current:  # left meanwhile: `on_screen_resume` goes on
            return
        quiet = getattr(self.app, "quiet", None)
        wait = PIECE_QUIET_S - quiet.user_quiet_for() if quiet is not None else 0.0
        if wait > 0:  # keys are coming in: mount when they pause
            self._next_scheduled = True
            self.set_timer(wait, self._mount_next)
            return
        await self._mount_piece()
        self._schedule_next()

    async def _mount_piece(self) -> None:
        """Mount the first piece waiting (one at a time: a Tab may ask while one mounts)."""
        quiet = getattr(self.app, "quiet", None)
        if quiet is not None:  # start-up threads leave the interpreter lock to this too
            quiet.busy()
        self._mounting = True
        try:
            parent, build = self._later[0]
            target = self.query_one(parent) if isinstance(parent, str) else parent
            await target.mount_all(build())
            self._later.pop(0)
        finally:
            self._mounting = False
        self._unplaced += 1  # until the layout after this piece (`_move_focus_in_order`)
        self.call_after_refresh(self._placed)
        self.call_after_refresh(freeze_heap)  # long-lived as the screen's own (`on_mount`)

    def _compositor_refresh(self) -> None:
        """Hand the frame to the terminal; the first one lets `mount_later` pieces start. A
        refresh's callbacks run once the screen is idle, which can be before the render pass:
        the first piece mounted ahead of the Packet step's first frame (40 ms of start-up)."""
        super()._compositor_refresh()
        if not self._framed and self is self.app.screen:
            self._framed = True
            self._schedule_next()

    def _placed(self) -> None:
        self._unplaced -= 1

    def focus_next(self, selector: str | type[QueryType] = "*") -> Widget | None:
        """Focus the next widget (Tab), in the order of the whole form while pieces mount
        (`mount_later`): see `_move_focus_in_order`."""
        return self._move_focus_in_order(1, selector)

    def focus_previous(self, selector: str | type[QueryType] = "*") -> Widget | None:
        """Focus the previous widget (shift+Tab), like `focus_next`."""
        return self._move_focus_in_order(-1, selector)

    def _move_focus_in_order(self, direction: int, selector: str | type) -> Widget | None:
        """Move focus by `direction` as if every piece were mounted. Textual orders the focus
        chain by where widgets are laid out, and a widget mounted since the last layout sits
        at (0, 0): a Tab then jumped into the piece just mounted (seen in tmux: from the step
        list to the hardware section). So a move waits for the layout after a piece, and one
        past the fields mounted so far mounts the next piece first."""
        if self._focus_waits_for_pieces(direction):
            self.call_next(self._move_focus_after_a_piece, direction, selector)
        elif self._unplaced or self._mounting:
            self.call_after_refresh(self._move_focus_in_order, direction, selector)
        elif direction > 0:
            return super().focus_next(selector)
        else:
            return super().focus_previous(selector)
        return self.focused

    def _focus_waits_for_pieces(self, direction: int) -> bool:
        """True when pieces wait and a move of focus by `direction` would go from the widget
        they mount into (the first `mount_later` parent) to one outside it, or back into it
        from outside (shift+Tab from the step list wraps to the form's last field)."""
        root, focused = self._later_root, self.focused
        if not self._later or root is None or focused is None:
            return False
        chain = self.focus_chain
        if focused not in chain:
            return False
        target = chain[(chain.index(focused) + direction) % len(chain)]
        inside = root in focused.ancestors
        return inside != (root in target.ancestors) and inside == (direction > 0)

    async def _move_focus_after_a_piece(self, direction: int, selector: str | type) -> None:
        if self._later and not self._mounting:
            await self._mount_piece()
        self._move_focus_in_order(direction, selector)

    def _style_inputs(self) -> tuple[object, ...]:
        """What app-wide state the screen's styles depend on (theme, the app's classes and
        pseudo-classes): when it is as it was, resuming need not restyle every widget."""
        app = self.app
        return (app.theme, frozenset(app.classes), app.app_focus, app.no_color, app.ansi_color)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # Textual restyles every widget of a screen each time it is shown (~20 ms for a lab
        # step, ~150 ms for the Packet form, twice on a first visit); the widgets already
        # have the styles of an unchanged app (focus changes restyle what they touch).
        self._shown_at = time.monotonic()
        inputs = self._style_inputs()
        if inputs == self._styled_for:
            event.refresh_styles = False
        self._styled_for = inputs
        self._bring_up_to_date()
        self._schedule_next()  # pieces paused while the screen was off (`mount_later`)

    def _bring_up_to_date(self) -> None:
        self.refresh_steps()
        working = self.workbench.working
        if working is not self._shown:  # screens off the stack catch up when they return
            self._shown = working
            self.show_packet(working)

    def _packet_changed(self, working: WorkingPacket) -> None:
        if self.is_current:
            self._bring_up_to_date()

    def _steps_changed(self, _: frozenset[str]) -> None:
        if self.is_current:
            self.refresh_steps()

    def refresh_steps(self) -> None:
        """Update the step list's marks."""
        self.query_one(StepList).show(self.workbench.step_rows(), self.step.id)

    def unsaved_work(self) -> list[str]:
        """What this step holds that is not in the packet (for the quit question)."""
        return []

    def tell(self, text: str, severity: str = "information") -> None:
        """Show an action's result (or refusal) in the status line; severity is information,
        warning or error ('' text clears the line)."""
        note = self.query_one("#status-line", Note)
        for name in ("information", "warning", "error"):
            note.set_class(bool(text) and name == severity, f"-{name}")
        mark = {"warning": "! ", "error": "✗ "}.get(severity, "")
        note.say(f"{mark}{text}" if text else "")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if isinstance(event.option_list, StepList) and event.option.id:
            event.stop()
            self.workbench.goto_step(event.option.id)

    def field_edited(self, path: tuple[str | int, ...], event: FieldEditor.Edited) -> None:
        """A packet field's editor posted text: check it while typed, apply it when committed;
        refused text stays as typed, in place and in the draft."""
        if event.commit:
            problem = self.workbench.edit(path, event.value, event.text)
        else:
            problem = self.workbench.check_edit(path, event.value)
            typed = event.value != event.editor.accepted
            self.workbench.keep_typed(path, event.text if typed else None)
        event.editor.problem = problem.message if problem else ""

    def action_focus_steps(self) -> None:
        """Move focus to the step list (leaves any field)."""
        self.query_one(StepList).focus()
