"""`workbench diff A B`: what changed between two packet revisions, section by section."""

from __future__ import annotations

import argparse
import json
from itertools import groupby
from pathlib import Path

from packets.load import load_packet
from packets.safe_text import printable, printable_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "diff",
        help="compare two packet revisions",
        description="Exit 0 when the packets are the same, 1 when they differ, 2 on usage errors.",
    )
    p.add_argument("old", type=Path, metavar="A")
    p.add_argument("new", type=Path, metavar="B")
    p.add_argument("--json", action="store_true", help="machine-readable list of changes")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from packets.diffing import diff_packets

    changes = diff_packets(load_packet(args.old).packet, load_packet(args.new).packet)
    if args.json:
        print(
            printable_json(json.dumps([c.__dict__ for c in changes], indent=2, ensure_ascii=False))
        )
    elif not changes:
        print("no changes")
    else:
        for section, items in groupby(changes, key=lambda c: c.section):
            print(f"== {section}")
            for change in items:
                print(printable(str(change)))  # packet text never reaches the terminal raw
    return 1 if changes else 0
