"""Noticing that the terminal has gone when no SIGHUP says so.

A dropped SSH link or a closed terminal sends SIGHUP only to the session leader. When the app
runs under a parent that outlives it (`make run`, a shell script, a parent that handles SIGHUP
itself) nobody signals the app: its terminal just hangs up, and Textual's input thread then
reads end-of-file in a busy loop, holding a core at 100% for good. Polling the terminal for
a hang-up (without reading from it) lets the app save its draft and exit as if it had been
sent SIGHUP.
"""

from __future__ import annotations

import select

HANGUP_POLL_S = 0.5
"""How often the app polls its terminal for a hang-up, s."""


def terminal_hung_up(fd: int) -> bool:
    """True when `fd` (the app's terminal or input pipe) reports a hang-up or is no longer
    usable; reads nothing. False where poll() does not exist."""
    if not hasattr(select, "poll"):
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    try:
        events = poller.poll(0)
    except OSError:
        return True
    return any(mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, mask in events)
