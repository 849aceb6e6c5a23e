"""`workbench artifact PACKET --role ROLE --ref REF`: record an owner's closure artifact."""

from __future__ import annotations

import argparse
from pathlib import Path

from packets.errors import UsageError
from packets.load import LoadedPacket, load_packet
from packets.schema import ALL_ROLES, ROLES_BY_TOPIC, Artifact, Packet


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("artifact", help="record an owner's closure artifact")
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--role", required=True, choices=ALL_ROLES)
    p.add_argument("--ref", required=True, metavar="PATH|URL")
    p.add_argument("--summary", metavar="TEXT")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from triage.review.writing import update_packet_file, with_owner

    loaded = load_packet(args.packet)
    artifact = Artifact(ref=args.ref, summary=args.summary)

    def record(current: LoadedPacket) -> Packet:  # under the lock, on the file as it is now
        owner = next((o for o in current.packet.owners if o.role == args.role), None)
        if owner is None:
            raise UsageError(f"no owner holds role '{args.role}' in {args.packet}")
        return with_owner(
            current.packet, args.role, owner.model_copy(update={"artifact": artifact})
        )

    update_packet_file(args.packet, record)
    kind = ROLES_BY_TOPIC[loaded.packet.topic][args.role]
    print(f"{args.role}: {kind} -> {args.ref}; wrote {args.packet}")
    return 0
