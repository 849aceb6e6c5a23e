"""`workbench run PACKET`: simulate one configuration; tail first, or the JSON contract."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from packets.errors import UsageError
from packets.load import load_packet
from packets.schema import MAX_REQUESTS
from workbench.commands.render import run_text, serving_text


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def check_request_cap(requests: int | None) -> None:
    """Hold a --requests override to the packet's own cap on inputs.workload.requests (memory
    grows linearly with it: model/runtime/README.md "Memory"). UsageError (exit 2) above it."""
    if requests is not None and requests > MAX_REQUESTS:
        raise UsageError(
            f"--requests {requests} is over the cap of {MAX_REQUESTS} requests per run "
            "(the limit on inputs.workload.requests); use several runs with other --seed values"
        )


def check_serving_cap(packet, requests: int | None) -> None:
    """Hold a --requests override on a serving packet to the serving cap (UsageError, exit 2)."""
    from packets.serving_checks import MAX_SERVING_REQUESTS

    serving = packet.inputs.workload.block.phase == "serving"
    if serving and requests is not None and requests > MAX_SERVING_REQUESTS:
        raise UsageError(
            f"--requests {requests} is over the cap of {MAX_SERVING_REQUESTS} requests per "
            "serving run (memory grows with its iterations); use several runs with other --seed "
            "values"
        )


def seed_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be in [0, 2^63), got {value}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="simulate the baseline or a candidate",
        description="Simulate one configuration of a packet with its seed (or --seed) and "
        "print the tail first (p99, p95, then p50/mean), the SLA verdict and the bottleneck.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--candidate", metavar="NAME", help="a candidate (default: the baseline)")
    p.add_argument("--seed", type=seed_int, help="override the packet's seed")
    p.add_argument("--requests", type=positive_int, help="override the request count")
    p.add_argument("--json", action="store_true", help="print the JSON contract")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from triage.runs import run_packet

    check_request_cap(args.requests)
    loaded = load_packet(args.packet)
    check_serving_cap(loaded.packet, args.requests)
    try:
        report = run_packet(loaded, args.candidate, seed=args.seed, requests=args.requests)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    if args.json:
        print(json.dumps(report.summary, indent=2, ensure_ascii=False, allow_nan=False))
    elif report.summary.get("scheduler") == "continuous":
        print(serving_text(report.summary))
    else:
        print(run_text(report.summary))
    return 0
