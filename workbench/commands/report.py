"""`workbench report PACKET --telemetry FILE...`: the closed-loop mapping report."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="closed-loop mapping report: accuracy, calibration, adaptation gain, actions",
        description="Combine the packet's compiled plan with telemetry (kernel telemetry, "
        "request telemetry, Chrome traces; told apart by content): compile-time mapping "
        "accuracy per op and shape bucket, a cross-validated calibration, observed vs "
        "simulated requests, the runtime adaptation gain against its retuning cost, and "
        "retuning actions ranked by p99 gain per compile second.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--telemetry", nargs="+", type=Path, default=[], metavar="FILE")
    p.add_argument(
        "--candidate", metavar="NAME", help="compile-only configuration (default: baseline)"
    )
    p.add_argument(
        "--adapted",
        metavar="NAME",
        help="a candidate to use as the runtime adaptation (default: every observed shape "
        "compiled, tiles retuned)",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print handoff-mapping-report/1 JSON")
    out.add_argument("--markdown", action="store_true", help="print markdown (the default)")
    p.set_defaults(run=run)


def _command(args: argparse.Namespace) -> str:
    parts = ["workbench", "report", str(args.packet)]
    if args.telemetry:
        parts += ["--telemetry", *map(str, args.telemetry)]
    for flag in ("candidate", "adapted"):
        if getattr(args, flag):
            parts += [f"--{flag}", getattr(args, flag)]
    return shlex.join(parts)


def run(args: argparse.Namespace) -> int:
    from packets.load import load_packet
    from triage.mapping.markdown import report_markdown
    from triage.mapping.report import report

    loaded = load_packet(args.packet)
    result = report(
        loaded,
        args.telemetry,
        candidate=args.candidate,
        adapted=args.adapted,
        command=_command(args),
    )
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        print(report_markdown(result), end="")
    return 0
