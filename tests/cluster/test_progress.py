"""The progress bar: on a terminal's stderr (done / total, rate, ETA), never with --quiet."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

from packets.examples import example_path

ARGV = [sys.executable, "-m", "workbench", "sweep", str(example_path("mapping-dynamic-shapes")),
        "--set", "batch_policy.max_batch=1,2,4,8", "--set", "inputs.workload.requests=500",
        "--json"]  # fmt: skip


def _stderr_on_a_terminal(*extra: str) -> tuple[bytes, bytes]:
    """(stdout, what the command wrote to a real pseudo-terminal as its stderr)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100x24
    env = {**os.environ, "WORKBENCH_PROGRESS_DELAY_S": "0"}
    proc = subprocess.Popen([*ARGV, *extra], stdout=subprocess.PIPE, stderr=follower, env=env)
    os.close(follower)
    out = proc.communicate(timeout=120)[0]
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the terminal closed: everything has been read
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.returncode == 0
    return out, b"".join(chunks)


def test_a_terminal_gets_a_bar_with_done_total_rate_and_eta() -> None:
    out, err = _stderr_on_a_terminal()
    assert out.startswith(b"[")  # stdout is the JSON alone
    assert b"sweep:" in err and b"/4 [" in err and b"run/s" in err and b"<" in err  # ETA


def test_quiet_silences_the_bar() -> None:
    out, err = _stderr_on_a_terminal("--quiet")
    assert out.startswith(b"[") and err == b""
