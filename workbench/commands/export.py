"""`workbench export PACKET -o OUT [--format yaml|markdown]`: the signed packet or a report."""

from __future__ import annotations

import argparse
from pathlib import Path

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


def run(args: argparse.Namespace) -> int:
    from triage.review.exporting import export_bytes, write_export

    loaded = load_packet(args.packet)
    data = export_bytes(loaded, args.format)
    write_export(data, args.output, source=args.packet, force=args.force)
    print(f"wrote {args.output} ({args.format})")
    return 0
