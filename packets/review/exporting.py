"""Exporting a packet: its bytes as signed (YAML) or a readable report (markdown), under the
rules `workbench export` and the app share.

Export is refused while a review guard blocks. The target must be another file than the packet;
an existing signed packet there is overwritten only when forced, and then a backup
(`OUT.bak`) is kept. Files are written atomically.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..files import atomic_write
from .guards import blocking, review_guards

if TYPE_CHECKING:
    from ..load import LoadedPacket

FORMATS = ("yaml", "markdown")


class SignedTargetError(UsageError):
    """The export target is an existing signed packet and overwriting it was not confirmed."""


def export_bytes(loaded: LoadedPacket, fmt: str) -> bytes:
    """What an export writes: `loaded.raw` byte for byte for yaml (the body the signatures cover
    and the signatures), the markdown report otherwise. UsageError while a guard blocks."""
    from ..signoff import verify_packet
    from .report_md import markdown_report

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


def holds_signed_packet(path: Path) -> bool:
    """True when `path` is a file whose top-level `signatures:` section has an entry."""
    try:
        return any(
            line.startswith(b"- role:")
            for line in path.read_bytes().split(b"\nsignatures:")[-1].splitlines()
        )
    except OSError:
        return False


def write_export(
    data: bytes, out: Path, *, source: Path | None, force: bool = False
) -> Path | None:
    """Write `data` to `out` atomically; returns the backup's path when one was kept.

    Refuses (UsageError) to write over `source`, and (SignedTargetError) over an existing signed
    packet unless `force`; a forced overwrite of an existing file keeps `OUT.bak` first.
    """
    if source is not None and out.resolve() == source.resolve():
        raise UsageError("export to a different file than the packet itself")
    if out.exists() and holds_signed_packet(out) and not force:
        raise SignedTargetError(f"{out}: an existing signed packet; use --force (a backup is kept)")
    backup = None
    if out.exists() and force:
        backup = out.with_name(out.name + ".bak")
        try:
            shutil.copy2(out, backup)
        except OSError as exc:
            raise UsageError(f"{backup}: cannot keep a backup: {exc.strerror or exc}") from None
    atomic_write(out, data)
    return backup
