"""The model's checks of the packet `workbench open` opens, run in a forked child meanwhile.

`workbench open` refuses a packet that `workbench check` refuses, before any screen opens. The
model's part of those checks (`packets.load.check_model`: hardware envelope, fusion groups, tile
fit) needs numpy and the compile-plan model, ~90 ms of imports at every start, and the app's
first frame needs neither. So `open` loads the packet without them, forks, and the child runs
them while the parent imports Textual and builds the app; `ForkedModelCheck.wait` takes the
child's verdict before the app runs: the same PacketError, or none, as an in-process check.

The verdict comes back over a pipe as JSON (each problem's file, line, path, message,
severity; nothing else is trusted from it). Where there is no child verdict (the child died,
sent something unreadable, or took longer than CHILD_TIMEOUT_S) or no fork (not Linux, or
threads already running, which a fork would leave half-copied), the check runs in-process at
`wait` and raises whatever it raises there: the result never depends on whether the fork
happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import threading
import time
from dataclasses import dataclass

from packets.errors import PacketError, Problem
from packets.load import LoadedPacket, check_model_of

CHILD_TIMEOUT_S = 30.0
"""How long `wait` waits for the child's verdict (the checks take ~0.1 s) before it kills the
child and checks in-process."""
MAX_VERDICT_BYTES = 1 << 20
"""Cap on the verdict read from the child (a few hundred bytes per problem)."""


def _encode(problems: list[Problem] | None) -> bytes:
    """The child's verdict: `{"problems": null}` when the checks passed."""
    rows = (
        None
        if problems is None
        else [[p.file, p.line, list(p.path), p.message, p.severity] for p in problems]
    )
    return json.dumps({"problems": rows}).encode()


def _decode(raw: bytes) -> list[Problem] | None:
    """Problems from the child's verdict (None: passed). ValueError when it is malformed."""
    try:
        rows = json.loads(raw)["problems"]
        if rows is None:
            return None
        problems = [
            Problem(str(file), int(line), tuple(path), str(message), str(severity))
            for file, line, path, message, severity in rows
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed verdict: {exc}") from None
    if not problems or not all(isinstance(part, str | int) for p in problems for part in p.path):
        raise ValueError("malformed verdict")
    return problems


def _run_child(loaded: LoadedPacket, write_fd: int) -> None:
    """In the child: check, write the verdict, leave without running the parent's exit code
    (no atexit handlers, no flush of the stdio buffers it copied)."""
    code = 1
    try:
        try:
            check_model_of(loaded)
            verdict = _encode(None)
        except PacketError as exc:
            verdict = _encode(exc.problems)
        view = memoryview(verdict)
        while view:
            view = view[os.write(write_fd, view) :]
        code = 0
    except BaseException:  # no verdict: the parent checks in-process and reports what it finds
        pass
    finally:
        os._exit(code)


@dataclass
class ForkedModelCheck:
    """A model check under way (`start`) and its verdict (`wait`).

    Attributes:
        loaded: the packet, loaded with `model=False`.
        pid: the child's process id (None: no child, the check runs at `wait`).
        read_fd: the pipe's end the verdict arrives on (None with no child).
    """

    loaded: LoadedPacket
    pid: int | None
    read_fd: int | None

    @classmethod
    def start(cls, loaded: LoadedPacket) -> ForkedModelCheck:
        """Fork a child that checks `loaded` (in-process at `wait` where a fork is unsafe)."""
        if not sys.platform.startswith("linux") or threading.active_count() > 1:
            return cls(loaded, None, None)
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to spare (ulimit -u): check in-process
            os.close(read_fd)
            os.close(write_fd)
            return cls(loaded, None, None)
        if pid == 0:
            os.close(read_fd)
            _run_child(loaded, write_fd)  # never returns
        os.close(write_fd)
        return cls(loaded, pid, read_fd)

    def wait(self) -> None:
        """Return when the packet passed the model's checks; raise PacketError (or what an
        in-process check raises) when it did not."""
        answered, problems = self._child_verdict()
        if not answered:
            check_model_of(self.loaded)
        elif problems is not None:
            raise PacketError(problems)

    def _child_verdict(self) -> tuple[bool, list[Problem] | None]:
        """(whether the child answered, its problems or None when the packet passed); reaps
        the child. A second call finds no child."""
        if self.pid is None or self.read_fd is None:
            return False, None
        pid, fd = self.pid, self.read_fd
        self.pid = self.read_fd = None
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        ready = select.poll()  # not select.select: it cannot wait on descriptors above 1023
        ready.register(fd, select.POLLIN)
        try:
            while size <= MAX_VERDICT_BYTES:
                left = deadline - time.monotonic()
                if left <= 0 or not ready.poll(left * 1000.0):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)  # stuck: its verdict no longer counts
                    chunks = []
                    break
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        finally:
            os.close(fd)
            _, status = os.waitpid(pid, 0)
        if size > MAX_VERDICT_BYTES or not chunks or os.waitstatus_to_exitcode(status) != 0:
            return False, None
        try:
            return True, _decode(b"".join(chunks))
        except ValueError:
            return False, None
