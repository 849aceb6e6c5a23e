"""The real app in a real terminal: tmux at 80x24, keys through every step (the lab steps' charts
drawn on screen, the review steps' forms and guards), then a dropped session mid-edit (tmux kills
the pane: SIGHUP) and a reopen that recovers the edit from the draft; and a hang-up that only
the app's parent is signalled about.

tmux is required (CI installs it); a missing tmux fails this test rather than skipping it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_bytes

TIMEOUT_S = 20.0


class Tmux:
    """One private tmux server (its own socket, no user config) holding one 80x24 session."""

    def __init__(self, env: dict[str, str]) -> None:
        tmux = shutil.which("tmux")
        assert tmux, "tmux is not installed: this test drives the app in a real terminal"
        self.base = [tmux, "-L", f"wb-{uuid.uuid4().hex[:8]}", "-f", "/dev/null"]
        self.env = env

    def run(self, *args: str) -> str:
        done = subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=10)
        assert done.returncode == 0, f"tmux {' '.join(args)}: {done.stderr.strip()}"
        return done.stdout

    def start(self, command: list[str]) -> int:
        """Start `command` as the pane's process; returns its pid."""
        env_args = [a for key, value in self.env.items() for a in ("-e", f"{key}={value}")]
        self.run("new-session", "-d", "-s", "wb", "-x", "80", "-y", "24", *env_args, *command)
        self.run("set-option", "-s", "escape-time", "10")
        self.run("set-option", "-t", "wb", "remain-on-exit", "on")  # keep what it prints at exit
        return int(self.run("display-message", "-p", "-t", "wb", "#{pane_pid}").strip())

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "wb")

    def keys(self, *keys: str, gap: float = 0.02) -> None:
        """Send keys one write at a time, `gap` seconds apart, as typed. (Keys that arrive
        together right after a Tab can reach the field Tab is leaving: Textual moves focus
        after it has dispatched them.)"""
        for key in keys:
            self.run("send-keys", "-t", "wb", key)
            time.sleep(gap)

    def wait_for(self, text: str, timeout: float = TIMEOUT_S) -> str:
        """The screen once `text` is on it (fails with the screen when it never appears)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            assert "Traceback" not in screen, screen
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"'{text}' never appeared; the screen was:\n{screen}")
            time.sleep(0.05)

    def kill_session(self) -> None:
        self.run("kill-session", "-t", "wb")

    def kill_server(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "TERM": "screen-256color",
        "COLORTERM": "",  # as over SSH: 256 colours
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    server = Tmux(env)
    yield server
    server.kill_server()


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_steps_by_keys_then_hangup_mid_edit_and_recover(tmux: Tmux, tmp_path: Path) -> None:
    packet = tmp_path / "packet.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    command = [sys.executable, "-m", "workbench.cli", "open", str(packet)]
    pid = tmux.start(command)
    tmux.wait_for("1 · Packet")
    for title, shown in (
        ("2 · Baseline", "1 compile plan"),  # the pipeline's first stage, once the model ran
        ("3 · Diagnose", "Tail drivers, ms"),  # a chart's title ...
        ("4 · Tune", "Latency by percentile"),
        ("5 · Mapping", "pad c/r"),  # the per-shape table, once the model ran
        ("6 · Proposal", "Propose (ctrl+r)"),
        ("7 · Validation", "Matrix (ctrl+r runs, ctrl+g cancels)"),
        ("8 · Release", "Owner override (ctrl+y)"),
        ("9 · Review", "guard(s) block signing and export"),  # no outputs yet: guards block
    ):
        tmux.keys("C-n")
        tmux.wait_for(title)
        screen = tmux.wait_for(shown)
        assert "› " in screen and "✓ 1 Packet" in screen
        if title in ("2 · Baseline", "3 · Diagnose", "4 · Tune"):
            assert "┤" in screen or "╭" in screen  # ... drawn: a plotext axis tick (or a box)
        if title == "4 · Tune":
            assert "└┬" in screen and "p99" in screen  # the chart's x axis and its tail ticks
    assert "Review question" in tmux.screen()
    tmux.keys("1")
    tmux.wait_for("Workload profile")

    # Tab from the step list to arrivals.rate_per_s (the 11th field), step it up once (+10/s),
    # then start typing in the next field and drop the session without pressing Enter.
    tmux.keys(*["Tab"] * 11, "Up", gap=0.1)
    tmux.wait_for("260.0")
    tmux.keys("Tab", gap=0.3)
    tmux.keys("1", ".", "5")  # arrivals.cv gets "1.5": refused for poisson, kept as typed
    tmux.wait_for("applies only to process gamma")
    tmux.wait_for("1.5")  # every key typed has arrived before the session drops
    tmux.kill_session()  # what a dropped SSH link does: the pane's process gets SIGHUP
    wait_until(lambda: not alive(pid), "the app to exit after SIGHUP")

    drafts = list((tmp_path / "home" / "state" / "handoff-workbench" / "drafts").glob("*.json"))
    assert len(drafts) == 1
    body = json.loads(drafts[0].read_text())
    assert "rate_per_s: 260.0" in body["packet"]
    assert body["pending"] == {"inputs.workload.arrivals.cv": "1.5"}

    tmux.start(command)
    screen = tmux.wait_for("Recover draft?")
    assert "inputs.workload.arrivals.rate_per_s: 250.0 -> 260.0" in screen
    tmux.keys("r")
    tmux.wait_for("● unsaved")  # (a toast about the recovery may cover the field itself)
    tmux.keys("C-s")
    wait_until(lambda: b"rate_per_s: 260.0" in packet.read_bytes(), "the recovered edit saved")
    tmux.keys("C-q")
    screen = tmux.wait_for("Quit with unsaved work?")  # arrivals.cv's refused text is pending
    assert "typed but not applied" in screen
    tmux.keys("y")
    tmux.wait_for("unsaved edits kept in the draft")  # ... and is still kept


def _children(pid: int) -> list[int]:
    """The pids of `pid`'s child processes (Linux /proc)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_a_hangup_no_signal_reports_still_saves_the_draft_and_exits(
    tmux: Tmux, tmp_path: Path
) -> None:
    """Under `make run` (or any parent that outlives the app) a dropped link signals only the
    parent, the session leader: the app sees its terminal hang up and nothing else. It must
    still save its draft and exit, not spin on the dead terminal."""
    packet = tmp_path / "packet.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    app = f"{sys.executable} -m workbench.cli open {packet}"
    parent = tmux.start(["sh", "-c", f"trap '' HUP; {app}; sleep 60"])  # like make: stays
    pids = [parent]
    try:
        tmux.wait_for("1 · Packet")
        (pid,) = _children(parent)
        pids.append(pid)
        tmux.keys(*["Tab"] * 11, "Up", gap=0.1)  # arrivals.rate_per_s 250 -> 260
        tmux.wait_for("260.0")
        tmux.kill_session()
        wait_until(lambda: not alive(pid), "the app to exit once its terminal hung up")
        assert alive(parent)  # nobody signalled the parent's children: the app left by itself
        drafts = list((tmp_path / "home" / "state" / "handoff-workbench" / "drafts").glob("*"))
        assert (
            len(drafts) == 1 and "rate_per_s: 260.0" in json.loads(drafts[0].read_text())["packet"]
        )
    finally:
        for left in pids:  # a failed run must not leave the app spinning
            if alive(left):
                os.kill(left, 9)


WEDGED_APP = """
import sys, time
from pathlib import Path
from textual.binding import Binding
from packets.load import load_packet
from workbench.app import WorkbenchApp, WorkbenchOptions
from workbench.core.session import open_working

class Wedged(WorkbenchApp):
    BINDINGS = [Binding("f12", "wedge", "Wedge", id="wedge", priority=True)]

    def action_wedge(self) -> None:
        self.screen.tell("wedged")  # drawn, and then the loop never runs again
        self.call_after_refresh(self.spin)

    def spin(self) -> None:
        while True:  # a handler that never returns (a bug): the UI loop is stuck in it
            time.sleep(0.001)

path = Path(sys.argv[1])
Wedged(open_working(load_packet(path), path)).run()
"""


def test_a_hangup_ends_an_app_whose_ui_loop_is_stuck(tmux: Tmux, tmp_path: Path) -> None:
    """A UI loop stuck in a handler never takes up a signal queued for it, and such an app
    outlived its terminal, spinning. The signal is answered on the main thread itself: with
    the loop stuck, the process exits within WEDGED_EXIT_S."""
    from workbench.app import WEDGED_EXIT_S

    packet = tmp_path / "packet.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    pid = tmux.start([sys.executable, "-c", WEDGED_APP, str(packet)])
    try:
        tmux.wait_for("1 · Packet")
        tmux.keys("F12")
        tmux.wait_for("wedged")
        time.sleep(0.5)  # the loop is in `spin` now
        hung_up = time.monotonic()
        tmux.kill_session()  # SIGHUP, as a dropped SSH link sends it
        deadline = hung_up + WEDGED_EXIT_S + 5.0
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(pid), "the app outlived its terminal"
        assert time.monotonic() - hung_up >= WEDGED_EXIT_S - 1.0  # the loop had its chance
    finally:
        if alive(pid):
            os.kill(pid, 9)
