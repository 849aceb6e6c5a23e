"""`workbench check FILE...`: validate packets, print every problem as FILE:LINE: path: message.

Every line printed is terminal-safe (`packets.safe_text.printable`: problems format that way;
the `ok` line names a file the user gave, which may hold anything)."""

from __future__ import annotations

import argparse
from pathlib import Path

from packets.errors import PacketError
from packets.files import read_file_bytes
from packets.load import parse_packet
from packets.safe_text import printable


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check",
        help="validate packet files",
        description="Validate packets. Exit 0 when all are valid, 1 when any is invalid, "
        "2 when a file cannot be read.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", type=Path)
    p.add_argument("-q", "--quiet", action="store_true", help="print problems only")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    contents = [(path, read_file_bytes(path)) for path in args.files]  # unreadable -> exit 2
    invalid = 0
    for path, raw in contents:
        try:
            loaded = parse_packet(raw, str(path), path.resolve().parent)
        except PacketError as exc:
            invalid += 1
            print("\n".join(str(p) for p in exc.problems))
            continue
        for warning in loaded.warnings:
            print(warning)
        if not args.quiet:
            note = f" ({len(loaded.warnings)} warning(s))" if loaded.warnings else ""
            print(printable(f"{path}: ok{note}"))
    return 1 if invalid else 0
