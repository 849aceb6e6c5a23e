"""Writing files so that a crash or a full disk never leaves a half-written one behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import UsageError


def atomic_write(path: str | Path, data: bytes, *, mode: int = 0o644) -> None:
    """Replace `path` with `data` atomically: temp file in the same folder, fsync, rename,
    fsync the folder. On any failure the old file (if any) is untouched and UsageError says why.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{path}: folder {folder} does not exist")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write here: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise UsageError(
            f"{path}: write failed, file left unchanged: {exc.strerror or exc}"
        ) from None
    with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def read_file_bytes(path: Path) -> bytes:
    """Read a file a user named, raising UsageError (exit 2) when it cannot be read at all."""
    try:
        if path.is_dir():
            raise UsageError(f"{path}: is a directory, not a packet file")
        return path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except PermissionError:
        raise UsageError(f"{path}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
