"""`workbench artifact PACKET --role ROLE --ref REF`: record an owner's closure artifact."""

from __future__ import annotations

import argparse
from pathlib import Path

from packets.errors import UsageError
from packets.load import load_packet
from packets.schema import ALL_ROLES, ROLES_BY_TOPIC, Artifact


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("artifact", help="record an owner's closure artifact")
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--role", required=True, choices=ALL_ROLES)
    p.add_argument("--ref", required=True, metavar="PATH|URL")
    p.add_argument("--summary", metavar="TEXT")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from packets.review.writing import with_owner, write_packet

    loaded = load_packet(args.packet)
    owner = next((o for o in loaded.packet.owners if o.role == args.role), None)
    if owner is None:
        raise UsageError(f"no owner holds role '{args.role}' in {args.packet}")
    artifact = Artifact(ref=args.ref, summary=args.summary)
    write_packet(
        loaded,
        with_owner(loaded.packet, args.role, owner.model_copy(update={"artifact": artifact})),
    )
    kind = ROLES_BY_TOPIC[loaded.packet.topic][args.role]
    print(f"{args.role}: {kind} -> {args.ref}; wrote {args.packet}")
    return 0
