"""Reading packets: bytes -> strict YAML -> schema -> cross-field checks, with every problem."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .checks import semantic_problems
from .errors import PacketError, Problem
from .files import read_file_bytes
from .messages import problems_from_validation
from .schema import FORMAT, Packet
from .strict_yaml import LoadedYaml, load_yaml


@dataclass(frozen=True)
class LoadedPacket:
    """A valid packet with where it came from and the warnings found while loading it."""

    packet: Packet
    name: str
    raw: bytes
    base_dir: Path | None
    warnings: tuple[Problem, ...]
    yaml: LoadedYaml | None = None

    def line_of(self, path: tuple[str | int, ...]) -> int:
        """Line of a field in the source (0 when the packet did not come from a file)."""
        return self.yaml.line_of(path) if self.yaml else 0


class _NoLines:
    """Stands in for the YAML line map when packet data did not come from a file."""

    data = None

    def line_of(self, path: tuple[str | int, ...]) -> int:
        return 0


def check_packet_data(
    data: dict[str, Any], name: str, base_dir: Path | None, lines: LoadedYaml | None = None
) -> tuple[Packet, tuple[Problem, ...]]:
    """Validate packet data (YAML already read, or built in Python, e.g. by an edit): the
    Packet and its warnings. Raises PacketError listing every error. `lines` locates problems
    in a source file (without it every line is 0)."""
    where: Any = lines if lines is not None else _NoLines()
    try:
        packet = Packet.model_validate(data)
    except ValidationError as exc:
        raise PacketError(problems_from_validation(Packet, exc, where, name, data)) from None
    found = semantic_problems(packet, lines, name, base_dir)
    errors = [p for p in found if p.severity == "error"]
    if errors:
        raise PacketError(errors)
    from .model_checks import model_problems  # numpy and the model load only for valid shapes

    errors = model_problems(packet, lines, name, base_dir)
    if errors:
        raise PacketError(errors)
    return packet, tuple(p for p in found if p.severity != "error")


def parse_packet(raw: bytes, name: str = "<packet>", base_dir: Path | None = None) -> LoadedPacket:
    """Validate packet bytes. Raises PacketError listing every error; never anything else.

    `name` labels errors; `base_dir` resolves relative paths inside the packet (traces,
    hardware files).
    """
    loaded = load_yaml(raw, name)
    data = loaded.data
    if not isinstance(data, dict):
        raise PacketError.single(name, 1, (), "a packet is a YAML mapping of sections")
    version = data.get("format")
    if version is None:
        raise PacketError.single(name, 1, ("format",), f"required field is missing ('{FORMAT}')")
    if version != FORMAT:
        raise PacketError.single(
            name,
            loaded.line_of(("format",)),
            ("format",),
            f"unknown format '{version}': this workbench reads {FORMAT}",
        )
    packet, warnings = check_packet_data(data, name, base_dir, loaded)
    return LoadedPacket(packet, name, raw, base_dir, warnings, loaded)


def load_packet(path: str | Path) -> LoadedPacket:
    """Read and validate the packet file at `path` (UsageError or PacketError on failure)."""
    path = Path(path)
    return parse_packet(read_file_bytes(path), str(path), path.resolve().parent)
