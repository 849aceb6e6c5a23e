"""`workbench recommend PACKET`: ship / ship-guarded / hold by the documented rule."""

from __future__ import annotations

import argparse
from pathlib import Path

from packets.errors import UsageError
from packets.load import LoadedPacket, load_packet
from packets.schema import ALL_ROLES, Override, Packet, Release


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recommend",
        help="release recommendation (ship / ship-guarded / hold)",
        description="Decide by the documented rule over the validation matrix and the review "
        "guards. An owner may override only with a written rationale, which is recorded.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--override", choices=("ship", "ship-guarded", "hold"), metavar="DECISION")
    p.add_argument("--role", choices=ALL_ROLES, help="the overriding owner's role")
    p.add_argument("--rationale", metavar="TEXT", help="why the override (required with it)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from triage.review.release import make_override, release
    from triage.review.writing import update_packet_file, with_outputs

    if args.override is not None and (not args.role or not args.rationale):
        raise UsageError("--override needs --role and a written --rationale")
    load_packet(args.packet)  # an unreadable or invalid file is reported before the lock
    decided: list[tuple[Release, Override | None]] = []

    def recommend(current: LoadedPacket) -> Packet:  # under the lock, on the file as it is now
        out = current.packet.outputs
        if out.mitigation is None or out.validation_matrix is None:
            raise UsageError(f"{args.packet}: run workbench propose and workbench validate first")
        override = None
        if args.override is not None:
            try:
                override = make_override(current.packet, args.role, args.override, args.rationale)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        decided.append((release(current.packet, override), override))
        return with_outputs(current.packet, release=decided[-1][0])

    update_packet_file(args.packet, recommend)
    decision, override = decided[-1]
    print(f"recommendation: {decision.recommendation}"
          + (f" (overridden from {decision.computed} by {override.role})" if override else ""))  # fmt: skip
    for reason in decision.reasons:
        print(f"  - {reason}")
    print(f"wrote {args.packet}")
    return 0
