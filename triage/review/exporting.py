"""Exporting a packet: its bytes as signed (YAML) or a readable report (markdown), under the
rules `workbench export` and the app share.

Export is refused while a review guard blocks. The target must be another file than the packet;
an existing signed packet there is overwritten only when forced, and then a backup
(`OUT.bak`) is kept. Files are written atomically, under the target's lock: the signed-packet
check, the backup and the write see the same file. The backup is an atomic write as well
(temp file beside it, fsync, rename): a failure while keeping it leaves no partial `.bak`, an
older one as it was, and the target unchanged (nothing is written then).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from packets.errors import UsageError
from packets.files import EXPORT_TARGET, FileKind, FileTooLarge, atomic_copy, locked
from triage.review.guards import blocking, review_guards

if TYPE_CHECKING:
    from packets.load import LoadedPacket

FORMATS = ("yaml", "markdown")
BACKUP = FileKind("export backup", EXPORT_TARGET.cap_bytes)  # names OUT.bak in errors


class SignedTargetError(UsageError):
    """The export target is an existing signed packet and overwriting it was not confirmed."""


def export_bytes(loaded: LoadedPacket, fmt: str) -> bytes:
    """What an export writes: `loaded.raw` byte for byte for yaml (the body the signatures cover
    and the signatures), the markdown report otherwise. UsageError while a guard blocks."""
    from packets.signoff import verify_packet
    from triage.review.report_md import markdown_report

    if fmt not in FORMATS:
        raise UsageError(f"export format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    guards = review_guards(loaded.packet)
    blocked = blocking(guards)
    if blocked:
        lines = "; ".join(f"{g.id}: {g.detail}" for g in blocked)
        raise UsageError(f"export refused: review guards block ({lines})")
    if fmt == "yaml":
        return loaded.raw
    return markdown_report(loaded, guards, verify_packet(loaded)).encode("utf-8")


def _has_signatures(data: bytes) -> bool:
    return any(
        line.startswith(b"- role:") for line in data.split(b"\nsignatures:")[-1].splitlines()
    )


def write_export(
    data: bytes, out: Path, *, source: Path | None, force: bool = False
) -> Path | None:
    """Write `data` to `out` atomically; returns the backup's path when one was kept.

    Refuses (UsageError) to write over `source`, and (SignedTargetError) over an existing signed
    packet unless `force`; a forced overwrite of an existing file keeps `OUT.bak` first.
    """
    if source is not None and out.resolve() == source.resolve():
        raise UsageError("export to a different file than the packet itself")
    with locked(out, EXPORT_TARGET) as held:
        try:
            existing = held.read(EXPORT_TARGET)
        except FileTooLarge:  # larger than any packet can be: not a signed packet
            existing = b""
        if existing is not None and _has_signatures(existing) and not force:
            raise SignedTargetError(
                f"{out}: an existing signed packet; use --force (a backup is kept)"
            )
        backup = None
        if existing is not None and force:
            backup = out.with_name(out.name + ".bak")
            try:
                atomic_copy(held.target, backup, kind=BACKUP)
            except UsageError as exc:
                raise UsageError(f"cannot keep a backup, nothing written: {exc}") from None
        held.write(data)
    return backup
