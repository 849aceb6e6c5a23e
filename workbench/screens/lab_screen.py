"""LabScreen: a step screen whose results come from the model, computed off the UI thread.

`compute(group, job, apply)` runs `job` (numpy/numba work in `workbench.lab.engine`) in a thread and
hands its result to `apply` on the UI thread, unless a newer request of the same group came in
meanwhile: each request gets a generation number and only the newest may show its result, so
a stale result never overwrites a newer one. With `debounce`, the worker first sleeps
DEBOUNCE_S; a newer request cancels that sleep (exclusive workers), so a burst of edits runs the
model once, for the last value (NOTES: thread workers cannot be interrupted, so the wait comes
before the thread). Anything still running after PROGRESS_AFTER_S says so on screen; a failure
becomes one line under the heading, never a crash.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from textual.app import ComposeResult

from workbench.widgets.note import Note

from .base import StepScreen

if TYPE_CHECKING:
    from workbench.lab.engine import Lab

DEBOUNCE_S = 0.05  # held keys repeat every 25-40 ms: a burst collapses into one run
PROGRESS_AFTER_S = 0.3  # quicker results need no progress indicator

T = TypeVar("T")


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (its class name when it has none)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class LabScreen(StepScreen):
    """Base of the Baseline, Diagnose and Tune steps: workers, progress and errors."""

    CSS_PATH = Path(__file__).parent / "lab.tcss"  # loaded with the first lab screen

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._generation: dict[str, int] = {}
        self._busy: dict[str, str] = {}

    def on_mount(self) -> None:
        super().on_mount()
        from workbench.core.heap import freeze_heap

        self.call_after_refresh(freeze_heap)  # this screen's widgets are long-lived too

    @property
    def lab(self) -> Lab:
        """The app's lab (cached model results shared by every step)."""
        return self.workbench.lab  # type: ignore[attr-defined]

    def compose_status(self) -> ComposeResult:
        """The progress and error lines (hidden while there is nothing to say)."""
        yield Note(id="lab-busy")
        yield Note(id="lab-error")

    def newest(self, group: str) -> int:
        """The generation of the newest request in `group` (0 before any)."""
        return self._generation.get(group, 0)

    def forget(self, group: str) -> None:
        """Drop whatever `group` has in flight (its result will not be shown)."""
        self._generation[group] = self.newest(group) + 1
        self._busy.pop(group, None)
        self._say_busy()

    def compute(
        self,
        group: str,
        job: Callable[[], T],
        apply: Callable[[T], None],
        *,
        debounce: bool = False,
        label: str = "running the model",
    ) -> int:
        """Run `job()` in a thread and `apply(result)` here, if still the newest of `group`.
        Returns the request's generation."""
        generation = self.newest(group) + 1
        self._generation[group] = generation
        self.run_worker(
            partial(self._work, group, generation, job, apply, debounce, label),
            name=f"lab-{group}",
            group=f"lab-{group}",
            exclusive=True,
            exit_on_error=False,
        )
        return generation

    def show_or_compute(
        self, group: str, found: T | None, job: Callable[[], T], apply: Callable[[T], None]
    ) -> bool:
        """`apply(found)` at once when the lab had the result cached (dropping whatever of
        `group` is in flight), else `compute` it. Returns True when it has to be computed."""
        if found is not None:
            self.forget(group)
            apply(found)
            return False
        self.compute(group, job, apply)
        return True

    def from_thread(self, group: str, generation: int, update: Callable[..., None]) -> Callable:
        """A callable a worker thread may call: it runs `update(*args)` on the UI thread if the
        request is still the newest (for progress). Call this on the UI thread."""
        loop = asyncio.get_running_loop()

        def guarded(*args: Any, **kwargs: Any) -> None:
            if self.newest(group) == generation:
                update(*args, **kwargs)

        return lambda *args, **kwargs: loop.call_soon_threadsafe(partial(guarded, *args, **kwargs))

    def stale(self, group: str, generation: int) -> Callable[[], bool]:
        """A check a worker thread may call between chunks: True once a newer request came."""
        return lambda: self.newest(group) != generation

    async def _work(
        self,
        group: str,
        generation: int,
        job: Callable[[], T],
        apply: Callable[[T], None],
        debounce: bool,
        label: str,
    ) -> None:
        from workbench.lab.engine import Cancelled

        if debounce:
            await asyncio.sleep(DEBOUNCE_S)
        timer = self.set_timer(PROGRESS_AFTER_S, partial(self._set_busy, group, generation, label))
        try:
            result = await asyncio.to_thread(job)
        except Cancelled:
            return
        except Exception as exc:
            if self.newest(group) == generation:
                self.say_error(f"{label} failed: {one_line(exc)}")
            return
        finally:
            timer.stop()
            if self._busy.pop(group, None) is not None:
                self._say_busy()
        if self.newest(group) != generation:
            return  # a newer request is running or has shown its result
        self.say_error("")
        try:
            apply(result)
        except Exception as exc:  # a display bug must not quit the app
            self.say_error(f"showing the result failed: {one_line(exc)}")

    def _set_busy(self, group: str, generation: int, label: str) -> None:
        if self.newest(group) == generation:
            self._busy[group] = label
            self._say_busy()

    def _say_busy(self) -> None:
        notes = self.query("#lab-busy")
        if notes:
            text = "; ".join(self._busy.values())
            notes.first(Note).say(f"⧗ {text[:1].upper()}{text[1:]}…" if text else "")

    @property
    def busy(self) -> bool:
        """True while any request of this screen is in flight."""
        return any(
            w.node is self and w.name.startswith("lab-") and not w.is_finished
            for w in self.app.workers
        )

    def say_error(self, text: str) -> None:
        """Show one line of error under the heading ('' clears it)."""
        notes = self.query("#lab-error")
        if notes:
            notes.first(Note).say(f"✗ {text}" if text else "")
