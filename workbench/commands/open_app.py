"""`workbench open [PACKET]` (also plain `workbench`): open the app on a packet."""

from __future__ import annotations

import argparse
from pathlib import Path

from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("open", help="open the workbench app (default: the example packet)")
    p.add_argument("packet", nargs="?", type=Path, metavar="PACKET")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    path = args.packet or example_path(DEFAULT_EXAMPLE)
    loaded = load_packet(path)  # invalid packets are reported before any screen opens
    from workbench.app import WorkbenchApp  # textual only loads for the app

    WorkbenchApp(loaded).run()
    return 0
