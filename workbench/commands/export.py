"""`workbench export PACKET -o OUT [--format yaml|markdown]`: the signed packet or a report."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from packets.errors import UsageError
from packets.files import atomic_write
from packets.load import load_packet


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="export the packet (YAML) or a readable report (markdown)",
        description="Refuses while a review guard blocks. Will not overwrite an existing signed "
        "packet without --force, and keeps a backup (OUT.bak) when it does.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT")
    p.add_argument("--format", choices=("yaml", "markdown"), default="yaml")
    p.add_argument("--force", action="store_true")
    p.set_defaults(run=run)


def _signed(path: Path) -> bool:
    try:
        return any(
            line.startswith(b"- role:")
            for line in path.read_bytes().split(b"\nsignatures:")[-1].splitlines()
        )
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    from packets.review.guards import blocking, review_guards
    from packets.review.report_md import markdown_report
    from packets.signoff import verify_packet

    loaded = load_packet(args.packet)
    guards = review_guards(loaded.packet)
    blocked = blocking(guards)
    if blocked:
        lines = "; ".join(f"{g.id}: {g.detail}" for g in blocked)
        raise UsageError(f"export refused: review guards block ({lines})")
    out: Path = args.output
    if out.resolve() == args.packet.resolve():
        raise UsageError("export to a different file than the packet itself")
    if out.exists() and _signed(out) and not args.force:
        raise UsageError(f"{out}: an existing signed packet; use --force (a backup is kept)")
    if out.exists() and args.force:
        shutil.copy2(out, out.with_name(out.name + ".bak"))
    if args.format == "yaml":
        data = loaded.raw  # byte for byte: the body the signatures cover, and the signatures
    else:
        data = markdown_report(loaded, guards, verify_packet(loaded)).encode("utf-8")
    atomic_write(out, data)
    print(f"wrote {out} ({args.format})")
    return 0
