"""The `workbench` command line.

With no sub-command it opens the app on the default example packet. Exit codes: 0 success,
1 invalid input (a packet problem, a failed check), 2 usage error (bad arguments, unreadable
file), 130 interrupted. Errors are one line each; a traceback is shown only with
WORKBENCH_DEBUG=1. Textual is imported only by the commands that open the app.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from packets.errors import PacketError, TelemetryProblem, UsageError
from packets.safe_text import printable

# name -> (module under workbench.commands, help): the parser lists every command from this
# table and imports only the chosen command's module, which adds its own arguments (importing
# all of them pulled numba, polars and the signing code into every start-up). The help text
# here is the module's own (tests/cli/test_lazy_commands.py checks they agree).
COMMANDS: dict[str, tuple[str, str]] = {
    "open": ("open_app", "open the workbench app (default: the example packet)"),
    "serve": ("serve", "serve the app to a browser on localhost"),
    "check": ("check", "validate packet files"),
    "schema": ("schema", "print the packet JSON Schema"),
    "examples": ("examples", "list or copy the example packets"),
    "run": ("run", "simulate the baseline or a candidate"),
    "sweep": ("sweep", "run a grid of --set edits"),
    "search": ("search", "guided search for a candidate (Optuna, seeded)"),
    "worksheet": ("worksheet", "fusion & tile-plan worksheet"),
    "telemetry": ("telemetry", "compare or calibrate the model against telemetry"),
    "report": (
        "report",
        "closed-loop mapping report: accuracy, calibration, adaptation gain, actions",
    ),
    "propose": ("propose", "classify the baseline's bottleneck and propose a candidate"),
    "validate": ("validate", "run the validation matrix for the proposed candidate"),
    "recommend": ("recommend", "release recommendation (ship / ship-guarded / hold)"),
    "artifact": ("artifact", "record an owner's closure artifact"),
    "sign": ("sign", "sign a packet as one owner (OpenSSH SSHSIG)"),
    "verify": ("verify", "verify owner signatures"),
    "export": ("export", "export the packet (YAML) or a readable report (markdown)"),
    "diff": ("diff", "compare two packet revisions"),
}


def command_module(name: str) -> ModuleType:
    """The module of command `name` (imported on first use)."""
    return importlib.import_module(f"workbench.commands.{COMMANDS[name][0]}")


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser: every command listed with its help, only `chosen`'s arguments added (its
    module imported); None imports none (enough for `workbench --help`)."""
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Terminal workbench for accelerator performance triage with handoff packets.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        if name == chosen:
            command_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def _with_command(argv: list[str]) -> list[str]:
    """`workbench [PACKET] [OPTIONS]` means `workbench open [PACKET] [OPTIONS]`."""
    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help")):
        return argv
    return ["open", *argv]


def main(argv: Sequence[str] | None = None) -> int:
    argv = _with_command(list(sys.argv[1:] if argv is None else argv))
    args = build_parser(argv[0] if argv[0] in COMMANDS else None).parse_args(argv)
    if args.command != "open":  # the app turns the collector on after its first frame
        if not gc.isenabled():  # started by the console script (workbench.entry): the start-up
            gc.freeze()  # objects stay out of the command's collections and shutdown's
        gc.enable()
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
