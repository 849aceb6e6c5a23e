"""Reading and writing the files a user names, so that no file can hang, flood or half-write.

Reading (`read_regular`): a file is opened with O_NONBLOCK and checked with fstat before a byte
is read, so a FIFO, a device (`/dev/zero`) or a directory is refused at once and never blocks;
a regular file is read up to its kind's size cap (`FileKind`) and refused past it, whatever
`st_size` says (`/proc` files report 0).

Writing (`locked`, `locked_update`, `atomic_write`, `atomic_copy`): every writer of a file takes an exclusive
flock on the file itself (on its folder while the file does not exist yet), re-reads the file
under the lock, then replaces it atomically: temp file in the same folder, fsync, rename, fsync
the folder. Because the rename swaps the inode, a writer that waited on the old inode sees the
swap after locking and locks the new one (the usual lock-then-recheck loop). The new file keeps
the old one's mode and group; a symlink is written through to its target (the link stays).
Temp files of this tool (`.NAME.XXXXXXXX.tmp`) older than the lock holder are left-overs of a
killed writer and are removed on the next write.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import PacketError, UsageError

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class FileKind:
    """What a file is for (used in errors) and the most bytes read from it."""

    label: str
    cap_bytes: int

    @property
    def cap_text(self) -> str:
        """The cap for messages: `1 MiB`, `64 KiB`."""
        if self.cap_bytes % MiB == 0:
            return f"{self.cap_bytes // MiB} MiB"
        return f"{self.cap_bytes // KiB} KiB"


# Size caps, one per kind of file (README "Files"). Each is far above the largest real file of
# its kind and far below what would hurt a 2-core machine with a few GB of memory.
PACKET = FileKind("packet file", 1 * MiB)  # = strict_yaml.MAX_BYTES; real packets: tens of KiB
HARDWARE = FileKind("hardware file", 1 * MiB)  # same YAML reader and cap as packets
TRACE = FileKind("arrival trace", 256 * MiB)  # ~20 M arrival times at ~12 bytes a line
PRIVATE_KEY = FileKind("key file", 64 * KiB)  # an OpenSSH RSA-16384 private key is ~12 KiB
PASSPHRASE = FileKind("passphrase file", 4 * KiB)  # one line is used
ALLOWED_SIGNERS = FileKind("allowed signers file", 4 * MiB)  # ~5,000 RSA-4096 lines
DRAFT = FileKind("draft", 8 * MiB)  # a 1 MiB packet's text JSON-escaped, plus refused text
EXPORT_TARGET = FileKind("export target", 1 * MiB)  # read only to see if it is a signed packet

LOCK_TIMEOUT_S = 30.0  # a writer holds a lock for a re-read and a write: milliseconds
_LOCK_POLL_S = 0.01
_CHUNK = 1 * MiB
# mkstemp names: prefix, 8 characters of its alphabet, suffix
_TEMP_TAIL = r"\.[a-z0-9_]{8}\.tmp"


class FileRefused(UsageError):
    """A file that cannot be read as the kind asked: missing, unreadable, not a regular file,
    or over its size cap. `reason` is the part after the file's name; `error_number` is the
    errno when the system refused (ENOENT, EACCES...), else None."""

    def __init__(self, name: str, reason: str, error_number: int | None = None) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason
        self.error_number = error_number


class FileTooLarge(FileRefused):
    """A regular file over its kind's size cap."""


_TOKEN_SAFE = re.compile(r"[^A-Za-z0-9._/+-]")


def sanitized_token(value: object, limit: int = 24) -> str:
    """A value read from a file, fit to quote in an error: at most `limit` characters, anything
    but letters, digits and `._/+-` shown as `?`, quoted (`'handoff-packet/0'`)."""
    text = _TOKEN_SAFE.sub("?", str(value))
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _file_type(mode: int) -> str:
    """`a FIFO`, `a character device`... for a non-regular st_mode."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _open_flags() -> int:
    return os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def _os_refusal(name: str, exc: OSError) -> FileRefused:
    return FileRefused(name, exc.strerror or str(exc), exc.errno)


def _check_regular(fd: int, name: str, kind: FileKind) -> os.stat_result:
    """fstat of an open file; FileRefused unless it is a regular file within the cap. A regular
    file then reads in blocking mode again (O_NONBLOCK served only to open without blocking)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(name, f"is {_file_type(st.st_mode)}, not a regular file ({kind.label})")
    if st.st_size > kind.cap_bytes:
        raise FileTooLarge(name, _too_large(kind, st.st_size))
    os.set_blocking(fd, True)
    return st


def _too_large(kind: FileKind, size: int | None) -> str:
    size_text = f"{size / MiB:.1f} MiB" if size is not None else f"over {kind.cap_text}"
    return f"{kind.label} is {size_text}; {kind.label}s are capped at {kind.cap_text}"


def _read_fd(fd: int, name: str, kind: FileKind) -> bytes:
    """At most cap bytes from an open regular file (FileTooLarge if there are more)."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(_CHUNK, kind.cap_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > kind.cap_bytes:
            raise FileTooLarge(name, _too_large(kind, None))


def read_regular(path: str | Path, kind: FileKind, label: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, at most `kind.cap_bytes` of them.

    Opens with O_NONBLOCK and checks with fstat before reading, so a FIFO, a device or a
    directory is refused without blocking. Raises FileRefused (a UsageError) naming `label`
    (default: the path) and never quoting the file's content.
    """
    name = label or str(path)
    try:
        fd = os.open(path, _open_flags())
    except OSError as exc:
        raise _os_refusal(name, exc) from None
    try:
        _check_regular(fd, name, kind)
        return _read_fd(fd, name, kind)
    except OSError as exc:
        raise _os_refusal(name, exc) from None
    finally:
        os.close(fd)


def read_file_bytes(path: Path, kind: FileKind = PACKET) -> bytes:
    """Read a packet or hardware file a user named: UsageError (exit 2) when it cannot be read
    at all (missing, a directory, a FIFO or device), PacketError (exit 1, like any file the YAML
    reader refuses) when it is over the cap."""
    try:
        return read_regular(path, kind)
    except FileTooLarge as exc:
        raise PacketError.single(str(path), 0, (), exc.reason) from None
    except FileRefused as exc:
        raise UsageError(f"{path}: {_packet_reason(exc, kind)}") from None


def _packet_reason(exc: FileRefused, kind: FileKind) -> str:
    if exc.error_number == errno.ENOENT:
        return "no such file"
    if exc.error_number == errno.EACCES:
        return "permission denied"
    if exc.reason.startswith("is a directory"):
        return f"is a directory, not a {kind.label}"
    if exc.error_number is None:
        return exc.reason
    return f"cannot read: {exc.reason}"


# --- writing ------------------------------------------------------------------------------


def write_target(path: str | Path) -> Path:
    """The file a write to `path` changes: symlinks followed to their final target."""
    return Path(os.path.realpath(path))


@dataclass(frozen=True)
class LockedFile:
    """A file held under its exclusive lock (see `locked`): read its current bytes, write new.

    Attributes:
        name: the path as the user gave it (used in errors).
        target: the real file written (symlinks resolved).
        current: stat of the file when the lock was taken (None: it did not exist).
        locked_at: time.time() when the lock was taken.
    """

    name: str
    target: Path
    current: os.stat_result | None
    locked_at: float
    _fd: int

    def read(self, kind: FileKind) -> bytes | None:
        """The file's bytes as they are now, under the lock (None when it does not exist)."""
        if self.current is None:
            return None
        try:
            os.lseek(self._fd, 0, os.SEEK_SET)
            return _read_fd(self._fd, self.name, kind)
        except OSError as exc:
            raise _os_refusal(self.name, exc) from None

    def write(self, data: bytes, *, mode: int = 0o644) -> None:
        """Replace the file atomically with `data`, keeping its mode and group (`mode` is for a
        new file). Removes this tool's stale temp files first. UsageError, file untouched, on
        failure. Once per lock: the lock stays on the replaced inode."""
        _remove_stale_temps(self.target, self.locked_at)
        _replace(self.name, self.target, data, self.current, mode)


def _flock(fd: int, name: str, deadline: float) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise UsageError(
                    f"{name}: another writer has held it for {LOCK_TIMEOUT_S:.0f} s; "
                    "nothing written"
                ) from None
            time.sleep(_LOCK_POLL_S)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@contextlib.contextmanager
def locked(path: str | Path, kind: FileKind = PACKET) -> Iterator[LockedFile]:
    """Hold the exclusive lock of the file at `path` (of its folder while it does not exist).

    The lock is a flock on the file itself; after taking it the path is checked to still name
    the locked inode (a writer may have replaced it meanwhile), else the lock is retaken on the
    new file. A path that exists but is not a regular file is refused (FileRefused).
    """
    name = str(path)
    target = write_target(path)
    folder = target.parent
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:
        try:
            fd = os.open(target, _open_flags() | os.O_NOFOLLOW)
            is_folder = False
        except FileNotFoundError:
            try:
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except FileNotFoundError:
                raise UsageError(f"{name}: folder {folder} does not exist") from None
            except OSError as exc:
                raise _os_refusal(str(folder), exc) from None
            is_folder = True
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise FileRefused(
                    name, "is a symlink that cannot be followed; nothing written"
                ) from None
            raise _os_refusal(name, exc) from None
        try:
            st = None if is_folder else _check_regular(fd, name, _unbounded(kind))
            _flock(fd, name, deadline)
            now = _lstat(target)
            if (now is None) if st is None else (now is not None and _same_file(st, now)):
                yield LockedFile(name, target, st, time.time(), fd)
                return
        finally:
            os.close(fd)  # releases the flock


def _unbounded(kind: FileKind) -> FileKind:
    """The kind without a size cap (locking a file never reads it; reads check the cap)."""
    return FileKind(kind.label, 1 << 62)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def locked_update(
    path: str | Path,
    update: Callable[[bytes | None], bytes | None],
    *,
    kind: FileKind = PACKET,
    mode: int = 0o644,
) -> bytes | None:
    """Read-modify-write under the file's lock: `update` gets the current bytes (None when the
    file does not exist) and returns the new bytes, or None to write nothing; it may raise to
    refuse (nothing is written). Returns what was written."""
    with locked(path, kind) as held:
        data = update(held.read(kind))
        if data is not None:
            held.write(data, mode=mode)
        return data


def atomic_write(
    path: str | Path, data: bytes, *, mode: int = 0o644, kind: FileKind = PACKET
) -> None:
    """Replace `path` with `data` atomically, under its lock (see the module docstring).
    On any failure the old file (if any) is untouched and UsageError says why. `mode` applies
    to a new file; an existing file keeps its mode and group. `kind` names the file in errors."""
    with locked(path, kind) as held:
        held.write(data, mode=mode)


def atomic_copy(source: Path, dest: str | Path, *, kind: FileKind = PACKET) -> None:
    """Copy the bytes of the file at `source` to `dest` atomically, under `dest`'s lock: they
    are streamed into a temp file beside `dest`, fsynced and renamed over it (the folder
    fsynced), as every write here. On any failure `dest` is as it was (an older copy kept) and
    no partial file is left; UsageError names `dest`. A new `dest` takes `source`'s mode; an
    existing one keeps its own mode and group. `kind` names `dest` in errors."""
    try:
        mode = stat.S_IMODE(os.stat(source).st_mode)
    except OSError as exc:
        raise _os_refusal(str(source), exc) from None
    with locked(dest, kind) as held:
        _remove_stale_temps(held.target, held.locked_at)
        _replace(held.name, held.target, source, held.current, mode)


def _stale_temp_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"\.{re.escape(name)}{_TEMP_TAIL}")


def _remove_stale_temps(target: Path, before: float) -> None:
    """Remove `.NAME.XXXXXXXX.tmp` files beside `target` last changed before `before` (the
    lock holder's start): only a writer holding the lock makes them, so these are a killed
    writer's left-overs."""
    pattern = _stale_temp_pattern(target.name)
    with contextlib.suppress(OSError), os.scandir(target.parent) as entries:
        for entry in entries:
            if not pattern.fullmatch(entry.name):
                continue
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and st.st_mtime < before:
                    os.unlink(entry.path)


def _keep_owner(fd: int, old: os.stat_result) -> None:
    """Give the new file the old one's group (and owner when allowed), then its mode bits."""
    new = os.fstat(fd)
    if new.st_gid != old.st_gid:
        os.fchown(fd, -1, old.st_gid)  # PermissionError when not a member of the group
    if new.st_uid != old.st_uid:
        with contextlib.suppress(PermissionError):  # only root can give a file away
            os.fchown(fd, old.st_uid, -1)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))


def _replace(
    name: str, target: Path, data: bytes | Path, old: os.stat_result | None, mode: int
) -> None:
    """Replace `target` with `data` (bytes, or the file at that path, streamed) atomically."""
    folder = target.parent
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(f"{name}: cannot write here: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(data, bytes):
                handle.write(data)
            else:
                with open(data, "rb") as source:
                    shutil.copyfileobj(source, handle, _CHUNK)
            handle.flush()
            if old is not None:
                try:
                    _keep_owner(handle.fileno(), old)
                except PermissionError:
                    raise UsageError(
                        f"{name}: cannot keep the file's group (gid {old.st_gid}); "
                        "file left unchanged"
                    ) from None
            else:
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        if isinstance(exc, OSError):
            raise UsageError(
                f"{name}: write failed, file left unchanged: {exc.strerror or exc}"
            ) from None
        raise
    with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
