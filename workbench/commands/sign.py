"""`workbench sign PACKET --role ROLE --key KEY`: add an owner's SSHSIG approval to a packet.

The body above `signatures:` is kept byte for byte; only the signatures section is rewritten,
atomically. Private key bytes never leave memory.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from packets.errors import UsageError
from packets.files import atomic_write
from packets.load import load_packet
from packets.schema import ALL_ROLES
from packets.signing.approval import DECISIONS
from packets.signing.ssherrors import AgentError, KeyLoadError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sign",
        help="sign a packet as one owner (OpenSSH SSHSIG)",
        description="Sign the packet's current body for ROLE with an OpenSSH key (Ed25519, "
        "ECDSA, RSA) or an ssh-agent key. Passphrase-protected keys prompt on the terminal.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument("--role", required=True, choices=ALL_ROLES)
    p.add_argument("--key", type=Path, help="private key file (with --agent: which agent key)")
    p.add_argument("--agent", action="store_true", help="sign with ssh-agent ($SSH_AUTH_SOCK)")
    p.add_argument("--principal", help="assert the principal the owner list binds to ROLE")
    p.add_argument("--decision", choices=DECISIONS, default="approve")
    p.add_argument(
        "--passphrase-file",
        type=Path,
        help="read the key's passphrase from the first line of this file (for scripts)",
    )
    p.set_defaults(run=run)


def _passphrase(args: argparse.Namespace):
    def ask(prompt: str) -> str:
        if args.passphrase_file is not None:
            try:
                return args.passphrase_file.read_text(encoding="utf-8").splitlines()[0]
            except (OSError, IndexError, UnicodeDecodeError):
                raise UsageError(f"{args.passphrase_file}: cannot read a passphrase") from None
        if not sys.stdin.isatty():
            raise UsageError("the key is encrypted: run in a terminal or use --passphrase-file")
        return getpass.getpass(prompt)

    return ask


def run(args: argparse.Namespace) -> int:
    from packets.review.guards import blocking, review_guards
    from packets.signing.keyfiles import load_private_key, read_public_key_blob
    from packets.signing.sshagent import agent_signer
    from packets.signoff import sign_packet

    loaded = load_packet(args.packet)
    blocked = blocking(review_guards(loaded.packet))
    if blocked and args.decision != "reject":  # an owner may always sign a rejection
        lines = "; ".join(f"{g.id}: {g.detail}" for g in blocked)
        raise UsageError(f"signing refused: review guards block ({lines})")
    try:
        if args.agent:
            blob = read_public_key_blob(args.key) if args.key else None
            key = agent_signer(blob)
        elif args.key is not None:
            key = load_private_key(args.key, _passphrase(args))
        else:
            raise UsageError("give --key KEY, or --agent to sign with ssh-agent")
        new = sign_packet(loaded, args.role, key, principal=args.principal, decision=args.decision)
    except (KeyLoadError, AgentError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    atomic_write(args.packet, new)
    principal = next(o.principal for o in loaded.packet.owners if o.role == args.role)
    print(f"{args.packet}: signed as {args.role} ({principal}), decision {args.decision}")
    return 0
