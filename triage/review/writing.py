"""Writing outputs back into a packet file: canonical bytes, atomically, under the file's lock.

Every command that rewrites a packet goes through `update_packet_file`: it takes the file's
exclusive lock (`packets.files.locked`), re-reads and re-validates the file as it is now, and
applies its change to those bytes, so two writers at once never lose each other's work. A
change computed from an earlier read (`write_packet`: propose and validate run the model for
seconds outside the lock) is written only if the file is still what it was computed from, or
differs only in signatures (kept, as any body edit leaves them: stale); otherwise it is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packets.dump import dump_packet
from packets.errors import UsageError
from packets.files import locked_update
from packets.schema import Owner, Packet

if TYPE_CHECKING:
    from packets.load import LoadedPacket


def with_outputs(packet: Packet, **sections: Any) -> Packet:
    """The packet with some output sections replaced."""
    return packet.model_copy(update={"outputs": packet.outputs.model_copy(update=sections)})


def with_owner(packet: Packet, role: str, owner: Owner) -> Packet:
    """The packet with one owner entry replaced."""
    owners = [owner if o.role == role else o for o in packet.owners]
    return packet.model_copy(update={"owners": owners})


def update_packet_file(path: str | Path, change: Callable[[LoadedPacket], Packet | bytes]) -> bytes:
    """Under the packet file's lock: read and validate the file as it is now, and write what
    `change` makes of it (a Packet, written canonically, or file bytes). Returns the bytes
    written. `change` may raise (UsageError with the reason) to refuse; nothing is written then.

    The new bytes are validated before writing, so a bad edit can never reach the disk.
    """
    from packets.load import parse_packet

    path = Path(path)
    base_dir = path.resolve().parent

    def update(current: bytes | None) -> bytes:
        if current is None:
            raise UsageError(f"{path}: no such file")
        result = change(parse_packet(current, str(path), base_dir))
        data = dump_packet(result) if isinstance(result, Packet) else result
        parse_packet(data, str(path), base_dir)
        return data

    written = locked_update(path, update)
    assert written is not None  # update never returns None
    return written


def _unsigned(packet: Packet) -> Packet:
    return packet.model_copy(update={"signatures": []})


def write_packet(
    loaded: LoadedPacket, packet: Packet, path: Path | None = None, *, doing: str = "writing"
) -> bytes:
    """Write `packet`, computed from `loaded`, canonically over the file it came from (or
    `path`); returns the bytes.

    Under the lock the file is re-read: if another writer changed more than its signatures since
    `loaded` was read, UsageError refuses (nothing written, `doing` says what was interrupted);
    signatures added meanwhile are kept.
    """
    target = path or Path(loaded.name)

    def change(current: LoadedPacket) -> Packet:
        if current.raw == loaded.raw:
            return packet
        if _unsigned(current.packet) != _unsigned(loaded.packet):
            raise UsageError(
                f"{target}: changed on disk while {doing} (another writer); nothing written: "
                "run it again on the new file"
            )
        return packet.model_copy(update={"signatures": current.packet.signatures})

    return update_packet_file(target, change)


def same_body(a: bytes, b: bytes) -> bool:
    """True when two packet files have the same body: every byte before `signatures:` (what an
    owner's signature covers)."""
    from packets.signing.packet import split_body

    return split_body(a)[0] == split_body(b)[0]
