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
from packets.files import PASSPHRASE, FileRefused, read_regular
from packets.load import LoadedPacket, load_packet
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
                raw = read_regular(args.passphrase_file, PASSPHRASE)
                return raw.decode("utf-8").splitlines()[0]
            except FileRefused as exc:
                raise UsageError(f"cannot read a passphrase: {exc}") from None
            except (IndexError, UnicodeDecodeError):
                raise UsageError(f"{args.passphrase_file}: cannot read a passphrase") from None
        if not sys.stdin.isatty():
            raise UsageError("the key is encrypted: run in a terminal or use --passphrase-file")
        return getpass.getpass(prompt)

    return ask


def _refuse_blocked(loaded: LoadedPacket, decision: str) -> None:
    from triage.review.guards import blocking, review_guards

    blocked = blocking(review_guards(loaded.packet))
    if blocked and decision != "reject":  # an owner may always sign a rejection
        lines = "; ".join(f"{g.id}: {g.detail}" for g in blocked)
        raise UsageError(f"signing refused: review guards block ({lines})")


def run(args: argparse.Namespace) -> int:
    from packets.signing.keyfiles import load_private_key, read_public_key_blob
    from packets.signing.sshagent import agent_signer
    from packets.signoff import sign_packet
    from triage.review.writing import same_body, update_packet_file

    loaded = load_packet(args.packet)  # refusals come before any passphrase prompt
    _refuse_blocked(loaded, args.decision)
    try:
        if args.agent:
            blob = read_public_key_blob(args.key) if args.key else None
            key = agent_signer(blob)
        elif args.key is not None:
            key = load_private_key(args.key, _passphrase(args))
        else:
            raise UsageError("give --key KEY, or --agent to sign with ssh-agent")
    except (KeyLoadError, AgentError) as exc:
        raise UsageError(str(exc)) from None

    def sign_current(current: LoadedPacket) -> bytes:
        """Sign the file as it is under the lock: other owners' signatures made meanwhile are
        kept; a body changed since it was first read is refused (the owner approves what they
        were shown, never bytes they have not seen)."""
        if not same_body(current.raw, loaded.raw):
            raise UsageError(
                f"{args.packet}: its body changed on disk while signing (another writer); "
                "nothing signed: review it and sign again"
            )
        _refuse_blocked(current, args.decision)
        try:
            return sign_packet(
                current, args.role, key, principal=args.principal, decision=args.decision
            )
        except (AgentError, ValueError) as exc:
            raise UsageError(str(exc)) from None

    update_packet_file(args.packet, sign_current)
    principal = next(o.principal for o in loaded.packet.owners if o.role == args.role)
    print(f"{args.packet}: signed as {args.role} ({principal}), decision {args.decision}")
    return 0
