"""`workbench verify PACKET`: every owner role must have a valid signature over the body."""

from __future__ import annotations

import argparse
from pathlib import Path

from packets.errors import UsageError
from packets.load import load_packet


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify",
        help="verify owner signatures",
        description="Exit 0 only if every owner role has a valid signature over the current "
        "body (and, with --allowed-signers, each key is allowed for its principal).",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--allowed-signers", type=Path, metavar="FILE", help="ssh-keygen format")
    p.add_argument(
        "--explain",
        action="store_true",
        help="print the ssh-keygen -Y verify commands that check each signature independently",
    )
    p.add_argument(
        "--reproduce",
        action="store_true",
        help="re-run the model from the inputs and seeds and check the outputs match exactly",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from packets.review.reproduce import reproduce
    from packets.signing.allowed_signers import AllowedSignersError, load_allowed_signers
    from packets.signing.explain import explain_commands
    from packets.signoff import signature_entries, verify_packet

    loaded = load_packet(args.packet)
    signers = None
    if args.allowed_signers is not None:
        try:
            signers = load_allowed_signers(args.allowed_signers)
        except (AllowedSignersError, OSError) as exc:
            raise UsageError(str(exc)) from None
    if args.explain:
        print(
            explain_commands(
                str(args.packet),
                signature_entries(loaded),
                str(args.allowed_signers) if args.allowed_signers else None,
            )
        )
        return 0
    report = verify_packet(loaded, signers)
    for role in report.roles:
        print(f"{role.role:<26} {role.status:<12} {role.principal}: {role.reason}")
    for problem in report.problems:
        print(f"packet: {problem}")
    if not report.keys_checked:
        print(
            "warning: no --allowed-signers given: a valid signature proves only that the key "
            "inside it signed, not whose key it is"
        )
    ok = report.ok
    if args.reproduce:
        mismatches = reproduce(loaded, str(args.packet))
        for line in mismatches[:20]:
            print(f"reproduce: {line}")
        if len(mismatches) > 20:
            print(f"reproduce: ... and {len(mismatches) - 20} more")
        print("outputs reproduced exactly" if not mismatches else "outputs NOT reproduced")
        ok = ok and not mismatches
    print("verified" if ok else "NOT verified")
    return 0 if ok else 1
