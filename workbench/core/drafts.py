"""Drafts: every edit autosaved beside the user's state, so a dropped link never loses work.

Textual-free. A draft is one JSON file per packet under
`$XDG_STATE_HOME/handoff-workbench/drafts/` (default `~/.local/state/...`), named after the
packet's absolute path. It holds the working packet's canonical bytes, the SHA-256 of the file
version the edits started from, and any refused text still in fields. Writes are atomic
(`packets.files.atomic_write`). A draft that cannot be read is set aside (renamed, never
deleted) and reported.
"""

from __future__ import annotations

import errno
import hashlib
import inspect
import json
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from packets.dump import dump_packet
from packets.errors import PacketError, UsageError
from packets.files import DRAFT, FileRefused, atomic_write, locked, read_regular
from packets.load import parse_packet
from packets.schema import Packet
from workbench.core.session import WorkingPacket, sha256_hex

DRAFT_FORMAT = "handoff-workbench-draft/1"
OWNER_CHECK_S = 1.0  # how often an idle draft writer checks that its owner is still there
APP_DIR = "handoff-workbench"


def state_home(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME`, or `~/.local/state` when unset or not absolute (XDG base dirs)."""
    env = os.environ if environ is None else environ
    value = env.get("XDG_STATE_HOME", "")
    if value and Path(value).is_absolute():
        return Path(value)
    return Path(env.get("HOME") or Path.home()) / ".local" / "state"


def drafts_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder drafts live in (not created here)."""
    return state_home(environ) / APP_DIR / "drafts"


def draft_path(packet_path: Path, folder: Path) -> Path:
    """The draft file for the packet at `packet_path`: keyed by its absolute path, named so a
    person listing the folder can tell which packet it belongs to."""
    absolute = str(packet_path.resolve())
    key = hashlib.sha256(absolute.encode("utf-8")).hexdigest()[:16]
    return folder / f"{packet_path.stem}-{key}.draft.json"


@dataclass(frozen=True)
class Draft:
    """A draft read back from disk.

    Attributes:
        path: the draft file.
        working: the working packet it restores (source = the packet file it belongs to).
        started_from_sha256: SHA-256 of the packet file version the edits started from.
    """

    path: Path
    working: WorkingPacket
    started_from_sha256: str

    def file_changed_since(self, current_file_bytes: bytes) -> bool:
        """True when the packet file is no longer the version the draft's edits started from."""
        return sha256_hex(current_file_bytes) != self.started_from_sha256


@dataclass(frozen=True)
class CorruptDraft:
    """A draft that could not be read; it was renamed to `set_aside_as` (never deleted)."""

    path: Path
    set_aside_as: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: unreadable draft ({self.reason}); kept as {self.set_aside_as.name}"


_last_dump: list[tuple[Packet, str]] = []  # one-entry memo, compared by identity


def _packet_text(packet: Packet) -> str:
    """Canonical text of `packet`. Dumping YAML takes ~10 ms and typing in a field changes only
    `pending`, so the last packet's text is reused (packets are immutable: identity suffices)."""
    if _last_dump and _last_dump[0][0] is packet:
        return _last_dump[0][1]
    text = dump_packet(packet).decode("utf-8")
    _last_dump[:] = [(packet, text)]
    return text


def draft_bytes(working: WorkingPacket) -> bytes:
    """The draft file's bytes for `working` (deterministic: sorted keys, no timestamps)."""
    body = {
        "format": DRAFT_FORMAT,
        "packet_path": str(working.source) if working.source else None,
        "started_from_sha256": working.source_sha256,
        "pending": dict(sorted(working.pending.items())),
        "packet": _packet_text(working.packet),
    }
    return (json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def write_draft(working: WorkingPacket, folder: Path) -> Path | None:
    """Save `working` as its packet's draft, or remove the draft when nothing is unsaved.

    Returns the draft path written (None when removed). Raises UsageError when it cannot write.
    """
    if working.source is None:
        raise UsageError("a packet with no file has no draft")
    path = draft_path(working.source, folder)
    if not working.has_unsaved_work:
        remove_draft(path)
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{folder}: cannot create drafts folder: {exc.strerror or exc}") from None
    atomic_write(path, draft_bytes(working), mode=0o600, kind=DRAFT)
    return path


def remove_draft(path: Path) -> None:
    """Delete a draft the user no longer needs (saved, or explicitly discarded)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise UsageError(f"{path}: cannot remove draft: {exc.strerror or exc}") from None


def set_aside(path: Path) -> Path:
    """Rename an unreadable draft to `<name>.corrupt-N` (first free N) and return the new path."""
    n = 1
    while (target := path.with_name(f"{path.name}.corrupt-{n}")).exists():
        n += 1
    os.replace(path, target)
    return target


def _decode(path: Path, raw: bytes, packet_path: Path) -> Draft:
    """Parse draft bytes; ValueError with a short reason when they are not a usable draft."""
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(body, dict) or body.get("format") != DRAFT_FORMAT:
        raise ValueError(f"not a {DRAFT_FORMAT} file")
    text, sha, pending = body.get("packet"), body.get("started_from_sha256"), body.get("pending")
    if not isinstance(text, str) or not isinstance(sha, str) or not isinstance(pending, dict):
        raise ValueError("missing packet, started_from_sha256 or pending")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in pending.items()):
        raise ValueError("pending must map field names to text")
    try:
        loaded = parse_packet(text.encode("utf-8"), str(path), packet_path.resolve().parent)
    except PacketError as exc:
        raise ValueError(f"its packet is invalid: {exc.problems[0]}") from None
    working = WorkingPacket(
        packet=loaded.packet,
        saved=loaded.packet,  # replaced by the file's packet in `recover`
        source=packet_path.resolve(),
        source_sha256=sha,
        name=str(packet_path),
        base_dir=loaded.base_dir,
        warnings=loaded.warnings,
        pending=MappingProxyType(dict(pending)),
    )
    return Draft(path, working, sha)


def read_draft(packet_path: Path, folder: Path) -> Draft | CorruptDraft | None:
    """The draft for the packet at `packet_path`: None when there is none, CorruptDraft (already
    set aside) when its content cannot be used. Raises UsageError, leaving the file alone, only
    when the draft exists but cannot be read or renamed (permissions)."""
    path = draft_path(packet_path, folder)
    try:
        raw = read_regular(path, DRAFT)  # a FIFO or device there is refused, never read
    except FileRefused as exc:
        if exc.error_number in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise UsageError(f"{path}: cannot read draft: {exc.reason}") from None
    try:
        return _decode(path, raw, packet_path)
    except ValueError as exc:
        reason = str(exc)
    try:
        aside = set_aside(path)
    except OSError as exc:
        raise UsageError(f"{path}: unusable draft ({reason}) cannot be renamed: {exc}") from None
    return CorruptDraft(path, aside, reason)


def recover(draft: Draft, current: WorkingPacket) -> WorkingPacket:
    """The draft's edits on top of the packet file as it is now: the working packet is the
    draft's, `saved` is the file's (so the edits show as unsaved until ctrl+s)."""
    return WorkingPacket(
        packet=draft.working.packet,
        saved=current.saved,
        source=current.source,
        source_sha256=current.source_sha256,
        name=current.name,
        base_dir=current.base_dir,
        warnings=draft.working.warnings,
        pending=draft.working.pending,
    )


def keep_both(draft: Draft, packet_path: Path, folder: Path | None = None) -> Path:
    """Write the draft's packet as `<stem>.recovered[-N].yaml` in `folder` (default: beside the
    original), never overwriting; remove the draft and return the new file's path."""
    folder = folder or packet_path.parent
    data = dump_packet(draft.working.packet)
    n = 1
    while True:
        suffix = ".recovered" if n == 1 else f".recovered-{n}"
        target = folder / f"{packet_path.stem}{suffix}.yaml"
        if not target.exists():
            with locked(target) as held:  # absent when checked; still absent under the lock?
                if held.current is None:
                    held.write(data)
                    break
        n += 1
    remove_draft(draft.path)
    return target


@dataclass(frozen=True)
class DraftOutcome:
    """What one draft write did.

    Attributes:
        generation: the write's number (`DraftWriter`: later writes have higher numbers).
        path: the draft written (None: removed, nothing being unsaved, or not written).
        error: why it was not written (a UsageError's one line), else None.
    """

    generation: int
    path: Path | None = None
    error: str | None = None


def _write_outcome(generation: int, working: WorkingPacket, folder: Path) -> DraftOutcome:
    try:
        return DraftOutcome(generation, path=write_draft(working, folder))
    except UsageError as exc:
        return DraftOutcome(generation, error=str(exc))
    except OSError as exc:  # write_draft names its own; anything else still gets one line
        return DraftOutcome(generation, error=f"{folder}: {exc.strerror or exc}")


class DraftWriter:
    """Writes drafts on one background thread, so the UI loop never waits on the disk (an
    atomic write ends in an fsync: 70 ms on this machine's disk at times, far more on a busy
    or network one, and the app autosaves on every step switch).

    Writes happen in the order asked, and a write asked while another is in flight replaces
    any still waiting (only the latest working packet is worth writing: `WorkingPacket` is
    immutable, so the thread reads a snapshot). `on_done` gets each background write's
    `DraftOutcome` on the writer thread. `write_now` (quit, hangup, save) drops what is
    waiting, waits out the write in flight and writes on the caller's thread.

    The thread is started by `start` and runs until `close`, or until a bound `on_done`'s
    owner has gone (it is held weakly; checked every OWNER_CHECK_S). The app starts it as it
    is built, before it runs: starting a thread waits for it to take the interpreter lock,
    which another thread (the model loading) can hold for a long time, so none is started on
    the UI's path; and a thread keeps the sys.stderr it was started under, which inside a
    running Textual app is the app's output capture, and so the app.
    """

    def __init__(self, on_done: Callable[[DraftOutcome], None]) -> None:
        if inspect.ismethod(on_done):
            self._on_done: Callable[[], Callable[[DraftOutcome], None] | None] = weakref.WeakMethod(
                on_done
            )  # type: ignore[arg-type]
        else:
            self._on_done = lambda: on_done
        self._cond = threading.Condition()
        self._waiting: tuple[int, WorkingPacket, Path] | None = None
        self._busy = False
        self._closed = False
        self._generation = 0
        self._thread: threading.Thread | None = None
        self.last_outcome: DraftOutcome | None = None
        """The latest background write's outcome (None before the first)."""

    def start(self) -> None:
        """Start the writer thread (once; `submit` starts it too if it was not)."""
        with self._cond:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="draft-writer", daemon=True)
                self._thread.start()

    def submit(self, working: WorkingPacket, folder: Path) -> int:
        """Write `working`'s draft in the background; returns the write's generation (after
        `close` nothing is written: the owner has gone, and `write_now` is the way then)."""
        self.start()
        with self._cond:
            self._generation += 1
            if not self._closed:
                self._waiting = (self._generation, working, folder)
                self._cond.notify_all()
            return self._generation

    def write_now(self, working: WorkingPacket, folder: Path) -> DraftOutcome:
        """Write `working`'s draft on this thread, after the write in flight (if any)."""
        with self._cond:
            self._generation += 1
            generation = self._generation
            self._waiting = None
            while self._busy:
                self._cond.wait()
            self._busy = True
        try:
            return _write_outcome(generation, working, folder)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until nothing is waiting or in flight; False if `timeout` (s) ran out."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._busy and self._waiting is None, timeout)

    def close(self) -> None:
        """Stop the thread once what waits is written."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while (self._waiting is None or self._busy) and not (
                    self._waiting is None and (self._closed or self._on_done() is None)
                ):
                    self._cond.wait(OWNER_CHECK_S)
                if self._waiting is None:  # closed (or its owner has gone), nothing left
                    self._thread = None
                    return
                generation, working, folder = self._waiting
                self._waiting = None
                self._busy = True
            try:
                outcome = _write_outcome(generation, working, folder)
            except Exception as exc:  # a bug: reported in one line; the thread goes on writing
                outcome = DraftOutcome(generation, error=f"{type(exc).__name__}: {exc}")
            with self._cond:
                self.last_outcome = outcome
                self._busy = False
                self._cond.notify_all()
            callback = self._on_done()
            if callback is not None:
                callback(outcome)
            del callback, working  # nothing of the owner's kept while the thread waits
