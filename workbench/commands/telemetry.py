"""`workbench telemetry compare FILE... --hardware H`: model predictions vs measured kernels."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("telemetry", help="compare or calibrate the model against telemetry")
    actions = p.add_subparsers(dest="action", metavar="{compare}", required=True)
    compare = actions.add_parser(
        "compare",
        help="predict every measured kernel and report the error",
        description="For every row: the model's prediction on the envelope; then MdAPE, MAPE, "
        "p90 error, median measured/predicted, per op, the worst shapes, and rows physically "
        "implausible under the envelope (counted and excluded).",
    )
    compare.add_argument("files", nargs="+", type=Path, metavar="FILE")
    compare.add_argument("--hardware", required=True, metavar="PRESET|FILE")
    out = compare.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--markdown", action="store_true")
    compare.set_defaults(run=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    from model.compiler.accuracy import accuracy_report, report_markdown
    from packets.telemetry_io import hardware_argument, read_kernels

    hardware = hardware_argument(args.hardware)
    telemetry = read_kernels(args.files)
    report = accuracy_report(telemetry.frame, hardware)
    report["excluded_on_read"] = telemetry.report.counts
    if args.json:
        print(json.dumps(report, indent=2, allow_nan=False))
        return 0
    print(report_markdown(report))
    for line in [*telemetry.report.lines(), *telemetry.warnings]:
        print(f"note: {line}")
    return 0
