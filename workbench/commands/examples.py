"""`workbench examples [list | copy NAME DEST]`: the shipped example packets."""

from __future__ import annotations

import argparse
from pathlib import Path

from packets.errors import UsageError
from packets.examples import example_bytes, example_names, example_title
from packets.files import atomic_write


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("examples", help="list or copy the example packets")
    actions = p.add_subparsers(dest="action", metavar="{list,copy}")
    actions.add_parser("list", help="list the examples (default)")
    copy = actions.add_parser("copy", help="copy an example to a file or folder")
    copy.add_argument("name", metavar="NAME")
    copy.add_argument("dest", metavar="DEST", type=Path)
    copy.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.action in (None, "list"):
        names = example_names()
        width = max(len(n) for n in names)
        for name in names:
            print(f"{name:<{width}}  {example_title(name)}")
        return 0
    data = example_bytes(args.name)
    dest: Path = args.dest
    if dest.is_dir():
        dest = dest / f"{args.name}.yaml"
    if dest.exists() and not args.force:
        raise UsageError(f"{dest}: already exists (use --force to overwrite)")
    atomic_write(dest, data)
    print(f"wrote {dest}")
    return 0
