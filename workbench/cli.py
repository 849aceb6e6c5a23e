"""The `workbench` command line.

With no sub-command it opens the app on the default example packet. Exit codes: 0 success,
1 invalid input (a packet problem, a failed check), 2 usage error (bad arguments, unreadable
file), 130 interrupted. Errors are one line each; a traceback is shown only with
WORKBENCH_DEBUG=1. Textual is imported only by the commands that open the app.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Sequence

from packets.errors import PacketError, TelemetryProblem, UsageError
from packets.safe_text import printable

from .commands import (
    artifact,
    check,
    diff,
    examples,
    export,
    open_app,
    propose,
    recommend,
    report,
    run,
    schema,
    search,
    serve,
    sign,
    sweep,
    telemetry,
    validate,
    verify,
    worksheet,
)

COMMANDS = (
    open_app,
    serve,
    check,
    schema,
    examples,
    run,
    sweep,
    search,
    worksheet,
    telemetry,
    report,
    propose,
    validate,
    recommend,
    artifact,
    sign,
    verify,
    export,
    diff,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Terminal workbench for accelerator performance triage with handoff packets.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    parser.command_names = list(sub.choices)  # type: ignore[attr-defined]
    return parser


def _with_command(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`workbench [PACKET] [OPTIONS]` means `workbench open [PACKET] [OPTIONS]`."""
    if argv and (argv[0] in parser.command_names or argv[0] in ("-h", "--help")):  # type: ignore[attr-defined]
        return argv
    return ["open", *argv]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_with_command(parser, list(sys.argv[1:] if argv is None else argv)))
    if args.command != "open":
        gc.enable()  # off for start-up (workbench.entry); the app turns it on after its first frame
    try:
        return args.run(args)
    except PacketError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 1
    except TelemetryProblem as exc:  # messages name files and values a user typed: sanitized
        print(f"workbench: {printable(str(exc))}", file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"workbench: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # last line of defence: one line, never a traceback
        if os.environ.get("WORKBENCH_DEBUG"):
            raise
        print(
            f"workbench: internal error: {type(exc).__name__}: {printable(str(exc))} "
            "(set WORKBENCH_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
