"""The packet being edited: an immutable `WorkingPacket` and the pure functions that change it.

Textual-free; the app only calls these. Every edit is checked exactly as a packet file is
(schema, then cross-field checks) and is either applied, giving a new WorkingPacket, or refused
with the Problem that explains why. Text that was refused is kept in `pending` so a draft holds
everything a reviewer typed, valid or not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from packets.dump import dump_packet
from packets.errors import PacketError, Problem, UsageError, dotted
from packets.files import PACKET, locked_update, read_regular
from packets.load import LoadedPacket, check_packet_data
from packets.schema import Packet

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class WorkingPacket:
    """A valid packet under edit, and what it was loaded from.

    Attributes:
        packet: the current packet (always valid: refused edits never reach it).
        saved: the packet as last read from or written to `source`.
        source: absolute path of the packet file (None for a packet with no file).
        source_sha256: hex SHA-256 of the file's bytes when it was read or last saved.
        name: label used in problems (the path as the user gave it).
        base_dir: folder that relative paths inside the packet (traces, hardware) resolve from.
        warnings: warnings for the current packet (from loading, then from each edit).
        pending: refused text per field (dotted path -> text), not yet a valid value.
    """

    packet: Packet
    saved: Packet
    source: Path | None
    source_sha256: str
    name: str
    base_dir: Path | None
    warnings: tuple[Problem, ...] = ()
    pending: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def dirty(self) -> bool:
        """True when the packet differs from the file (what ctrl+s would write)."""
        return self.packet != self.saved

    @property
    def has_unsaved_work(self) -> bool:
        """True when there is anything a draft must keep: edits or refused text."""
        return self.dirty or bool(self.pending)


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of `data` (identifies which version of a packet file a draft started from)."""
    return hashlib.sha256(data).hexdigest()


def open_working(loaded: LoadedPacket, source: Path | None) -> WorkingPacket:
    """A WorkingPacket for a packet just loaded from `source` (no edits yet)."""
    return WorkingPacket(
        packet=loaded.packet,
        saved=loaded.packet,
        source=source.resolve() if source is not None else None,
        source_sha256=sha256_hex(loaded.raw),
        name=loaded.name,
        base_dir=loaded.base_dir,
        warnings=loaded.warnings,
    )


def _set_in(data: Any, path: Path_, value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    if value is None:
        if isinstance(data, dict):
            data.pop(path[-1], None)
        else:
            data[path[-1]] = None
    else:
        data[path[-1]] = value


def _most_relevant(problems: list[Problem], path: Path_) -> Problem:
    """The problem at the edited field if any, else the first one, its message naming where."""
    for problem in problems:
        if problem.path == path:
            return problem
    first = problems[0]
    return replace(first, path=path, message=f"{dotted(first.path)}: {first.message}")


def apply_edit(working: WorkingPacket, path: Path_, value: Any) -> WorkingPacket | Problem:
    """Set the field at `path` to `value` (None removes it, so its default applies), checked
    exactly as a packet file is (`packets.load.check_packet_data`).

    Returns the new WorkingPacket, with warnings recomputed and any pending text for the field
    cleared, or the Problem saying why the edit is refused (the packet is then unchanged).
    """
    data = working.packet.model_dump(mode="python", exclude_none=True)
    try:
        _set_in(data, path, value)
    except (KeyError, IndexError, TypeError):
        return Problem(working.name, 0, path, "no such field in this packet")
    try:
        packet, warnings = check_packet_data(data, working.name, working.base_dir)
    except PacketError as exc:
        return _most_relevant(exc.problems, path)
    pending = {k: v for k, v in working.pending.items() if k != dotted(path)}
    return replace(working, packet=packet, warnings=warnings, pending=MappingProxyType(pending))


def set_pending(working: WorkingPacket, path: Path_, text: str | None) -> WorkingPacket:
    """Record (or with None, forget) refused text typed into the field at `path`."""
    pending = dict(working.pending)
    if text is None:
        pending.pop(dotted(path), None)
    else:
        pending[dotted(path)] = text
    return replace(working, pending=MappingProxyType(pending))


def changed_fields(before: Packet, after: Packet) -> list[str]:
    """'path: old -> new' for every field that differs between two packets (lists whole)."""
    changes: list[str] = []

    def walk(a: Any, b: Any, path: Path_) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                walk(a.get(key), b.get(key), (*path, key))
        elif a != b:
            changes.append(f"{dotted(path)}: {_short(a)} -> {_short(b)}")

    walk(before.model_dump(mode="json"), after.model_dump(mode="json"), ())
    return changes


def _short(value: Any) -> str:
    text = "not set" if value is None else _plain(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _plain(value: Any) -> str:
    """A value as a packet file writes it (YAML flow style), not as Python's repr: lists
    `[512, 1024]`, mappings `{bf16: 0.9991}`, booleans `true`, text unquoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_plain(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_plain(v)}" for k, v in value.items()) + "}"
    return "null" if value is None else str(value)


def disk_sha256(working: WorkingPacket) -> str | None:
    """SHA-256 of the packet file as it is on disk now (None: no file, or it cannot be read as
    a packet file: missing, not a regular file, over the cap)."""
    if working.source is None:
        return None
    try:
        return sha256_hex(read_regular(working.source, PACKET))
    except UsageError:
        return None


def source_changed(working: WorkingPacket) -> bool:
    """True when the packet file on disk is no longer the version the session started from."""
    if working.source is None:
        return False
    return disk_sha256(working) != working.source_sha256


def save_packet(
    working: WorkingPacket, path: Path | None = None, *, overwrite_sha256: str | None = None
) -> WorkingPacket:
    """Write the packet's canonical bytes atomically to `path` (default: its source file), under
    the file's lock (`packets.files.locked_update`).

    Saving over its own source is refused when the file, re-read under the lock, is neither the
    version last read or saved nor `overwrite_sha256` (the version the user agreed to overwrite):
    another writer's change is never overwritten unseen. Returns the WorkingPacket marked saved.
    Raises UsageError when it cannot be written. Refused text in `pending` is not part of the
    packet and stays pending.
    """
    target = path or working.source
    if target is None:
        raise UsageError("this packet has no file: save it to a path")
    data = dump_packet(working.packet)
    own_file = working.source is not None and target.resolve() == working.source
    allowed = {working.source_sha256, overwrite_sha256}

    def update(current: bytes | None) -> bytes:
        if own_file and current is not None and sha256_hex(current) not in allowed:
            raise UsageError(
                f"{working.name}: changed on disk since it was opened (another writer); "
                "nothing saved: ctrl+s again overwrites it"
            )
        return data

    locked_update(target, update)
    return replace(
        working, saved=working.packet, source=target.resolve(), source_sha256=sha256_hex(data)
    )
