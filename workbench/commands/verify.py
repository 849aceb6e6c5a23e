"""`workbench verify PACKET`: every owner signed, validly, with an allowed key, and none rejected.

Exit 0 when the packet verifies; 1 when it does not (each reason printed); 2 when the command
cannot start (no such packet, an unreadable or malformed allowed_signers file). Which keys may
sign for which principal comes from `--allowed-signers FILE`, else from git's
`gpg.ssh.allowedSignersFile` (as `git verify-commit` reads it); without either the identity of
the signers is not checked, and the packet does not verify.
"""

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
        "body by a key the allowed signers list for its principal, and no owner rejected; "
        "exit 1 (with the reasons) otherwise, 2 when the command cannot start. Allowed "
        "signers: --allowed-signers FILE, else git's gpg.ssh.allowedSignersFile.",
    )
    p.add_argument("packet", type=Path, metavar="PACKET")
    p.add_argument(
        "--allowed-signers",
        type=Path,
        metavar="FILE",
        help="ssh-keygen allowed_signers file (default: git config gpg.ssh.allowedSignersFile)",
    )
    p.add_argument(
        "--signatures-only",
        action="store_true",
        help="check that every signature is valid over the body, not whose key it is (without "
        "allowed signers) nor what each owner decided",
    )
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


def _allowed_signers_file(args: argparse.Namespace) -> tuple[Path | None, str]:
    """(file, where it was named): --allowed-signers, else git's setting, else (None, '')."""
    from packets.signing.allowed_signers import GIT_SETTING, git_allowed_signers_file

    if args.allowed_signers is not None:
        return args.allowed_signers, "--allowed-signers"
    configured = git_allowed_signers_file()
    return (configured, f"git config {GIT_SETTING}") if configured else (None, "")


def _recommendation(loaded, report) -> str:
    """The recorded release recommendation, unless the packet's bytes are in doubt (then what
    the loader read may not be what was signed, so it is not repeated)."""
    if report.problems:
        return "not shown: the packet has problems (above)"
    release = loaded.packet.outputs.release
    if release is None:
        return "none recorded"
    if release.recommendation != release.computed:
        return f"{release.recommendation} (override; the rule gives {release.computed})"
    return release.recommendation


def run(args: argparse.Namespace) -> int:
    from packets.signing.allowed_signers import AllowedSignersError, load_allowed_signers
    from packets.signing.explain import explain_commands
    from packets.signoff import signature_section, verify_packet
    from triage.review.reproduce import reproduce

    loaded = load_packet(args.packet)
    path, named_by = _allowed_signers_file(args)
    signers = None
    if path is not None:
        try:
            signers = load_allowed_signers(path)
        except (AllowedSignersError, OSError) as exc:
            raise UsageError(f"{exc} (named by {named_by})") from None
    if args.explain:
        entries, _ = signature_section(loaded)
        print(explain_commands(str(args.packet), entries, str(path) if path else None))
        return 0
    report = verify_packet(loaded, signers)
    for role in report.roles:
        decision = role.decision if role.status != "missing" and role.decision else "-"
        print(f"{role.role:<26} {role.status:<12} {decision:<20} {role.principal}: {role.reason}")
    for problem in report.problems:
        print(f"packet: {problem}")
    print(f"release recommendation: {_recommendation(loaded, report)}")
    if path is not None:
        print(f"allowed signers: {path} (from {named_by})")
    else:
        print(
            "identity not checked: no allowed signers (give --allowed-signers FILE or set git "
            "config gpg.ssh.allowedSignersFile): a valid signature proves only that the key "
            "inside it signed, not whose key it is"
        )
    failures = list(report.failures(signatures_only=args.signatures_only))
    if args.reproduce:
        mismatches = reproduce(loaded, str(args.packet))
        for line in mismatches[:20]:
            print(f"reproduce: {line}")
        if len(mismatches) > 20:
            print(f"reproduce: ... and {len(mismatches) - 20} more")
        print("outputs reproduced exactly" if not mismatches else "outputs NOT reproduced")
        failures += ["outputs not reproduced"] if mismatches else []
    if failures:
        print(f"NOT verified: {'; '.join(failures)}")
        return 1
    print("verified (signatures only)" if args.signatures_only else "verified")
    return 0
