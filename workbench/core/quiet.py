"""UserQuiet: when the user last gave the UI work, so background start-up work can wait for a pause.

Textual-free. Python threads share one interpreter lock: a background thread importing modules
or loading numba's cached kernels takes it from the UI loop every few milliseconds, and a step
switch made meanwhile (a first visit composes and lays out a screen: 50-120 ms of UI-thread
CPU) took two to three times as long, 200-500 ms instead of ~100 (benchmarks/bench_app.py, the
tmux walk right after start-up). The app marks every key, mouse press and step switch
(`touch`); start-up work that can wait (importing the other steps' modules, the model warm-up)
runs its next piece only once the user has paused `QUIET_S` (`wait`).
"""

from __future__ import annotations

import threading
import time

QUIET_S = 0.4
"""A pause this long (seconds) lets background start-up work go on: longer than a first visit
takes on the 2-core machine under load (~0.3 s), shorter than the time a person reads a new
screen; keys typed in a burst (a field's text, Tab, a held arrow) come faster."""

WAKE_S = 0.02  # how often a wait with `until` also looks at `closed` (seconds)


class UserQuiet:
    """The time of the user's last action and of the UI's last deferred work (monotonic
    seconds), shared with worker threads."""

    def __init__(self) -> None:
        self._user_at = self._busy_at = time.monotonic()
        self.closed = threading.Event()
        """Set when the app exits: waiting threads return at once."""

    def touch(self) -> None:
        """The user did something (the UI loop is busy with it): call on the UI thread."""
        self._user_at = time.monotonic()

    def busy(self) -> None:
        """The UI thread does deferred work of its own (a form piece mounting): threads wait
        for it as for the user, but it does not count as the user's action."""
        self._busy_at = time.monotonic()

    def user_quiet_for(self) -> float:
        """Seconds since the user's last action."""
        return time.monotonic() - self._user_at

    def quiet_for(self) -> float:
        """Seconds since the user's last action or the UI's last deferred work."""
        return time.monotonic() - max(self._user_at, self._busy_at)

    def wait(self, quiet_s: float = QUIET_S, until: threading.Event | None = None) -> bool:
        """Block (a worker thread) until the user and the UI have been quiet `quiet_s`
        seconds, or `until` is set (the work is wanted now). Returns False when the app
        closed meanwhile (the work should stop)."""
        while not self.closed.is_set():
            left = quiet_s - self.quiet_for()
            if left <= 0 or (until is not None and until.is_set()):
                return True
            (until or self.closed).wait(min(left, WAKE_S) if until is not None else left)
        return False
