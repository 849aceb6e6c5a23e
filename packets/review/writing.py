"""Writing outputs back into a packet file: canonical bytes, atomically."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..dump import dump_packet
from ..files import atomic_write
from ..schema import Owner, Packet

if TYPE_CHECKING:
    from ..load import LoadedPacket


def with_outputs(packet: Packet, **sections: Any) -> Packet:
    """The packet with some output sections replaced."""
    return packet.model_copy(update={"outputs": packet.outputs.model_copy(update=sections)})


def with_owner(packet: Packet, role: str, owner: Owner) -> Packet:
    """The packet with one owner entry replaced."""
    owners = [owner if o.role == role else o for o in packet.owners]
    return packet.model_copy(update={"owners": owners})


def write_packet(loaded: LoadedPacket, packet: Packet, path: Path | None = None) -> bytes:
    """Write `packet` canonically over the file it came from (or `path`); returns the bytes.

    Re-validates the bytes before writing, so a bad edit can never reach the disk.
    """
    from ..load import parse_packet

    data = dump_packet(packet)
    parse_packet(data, loaded.name, loaded.base_dir)
    atomic_write(path or Path(loaded.name), data)
    return data
