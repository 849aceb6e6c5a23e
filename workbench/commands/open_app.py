"""`workbench open [PACKET]` (also plain `workbench`): open the app on a packet."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from packets.examples import DEFAULT_EXAMPLE, example_path
from packets.load import load_packet


def add_app_options(p: argparse.ArgumentParser) -> None:
    """Options shared by `open` and `serve`: the packet and how the app looks."""
    p.add_argument("packet", nargs="?", type=Path, metavar="PACKET")
    p.add_argument(
        "--theme",
        metavar="NAME",
        help="colour theme from themes/ (workbench-dark, workbench-light, "
        "workbench-high-contrast, workbench-ansi); unknown names fall back to the default",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("open", help="open the workbench app (default: the example packet)")
    add_app_options(p)
    p.add_argument("--no-mouse", action="store_true", help="do not capture the mouse")
    p.add_argument(
        "--stall-report",
        type=Path,
        metavar="FILE",
        help="measure UI event-loop lag and write its statistics (JSON) to FILE on exit",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    path = args.packet or example_path(DEFAULT_EXAMPLE)
    loaded = load_packet(path)  # invalid packets are reported before any screen opens
    from workbench.app import WorkbenchApp, WorkbenchOptions  # textual only loads for the app
    from workbench.core.session import open_working

    app = WorkbenchApp(
        open_working(loaded, Path(path)),
        WorkbenchOptions(theme=args.theme, stall_report=args.stall_report),
    )
    app.run(mouse=not args.no_mouse)
    for note in app.exit_notes.values():
        with contextlib.suppress(OSError):  # after a hangup there is no terminal to tell
            print(f"workbench: {note}", file=sys.stderr)
    return app.return_code or 0  # 128 + signal number after SIGHUP or SIGTERM
