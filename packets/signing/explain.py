"""`workbench verify --explain`: shell commands that re-check each signature with OpenSSH alone.

The point is independence: a reviewer who does not trust the workbench can run these with
ssh-keygen, awk and sha256sum and reach the same verdict on every signature.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from packets.signing import sshsig
from packets.signing.packet import NAMESPACE, entry_statement
from packets.signing.ssherrors import SignatureError
from packets.signing.sshkeys import openssh_public_line

_HEREDOC_END = "HANDOFF_EOF"  # never a line of a canonical statement or of armored base64


def explain_commands(
    packet_path: str,
    entries: Sequence[Mapping[str, object]],
    allowed_signers_path: str | None = None,
) -> str:
    """A bash script that re-checks each entry with OpenSSH alone, independent of the workbench.

    Per entry: compare the body's SHA-256 with the statement's, write the statement and the
    signature to temp files, then `ssh-keygen -Y verify`. With `allowed_signers_path` the trusted
    file is used; without it a one-line file is built from the key inside the signature, which
    proves only that this key signed (compare its fingerprint with the one you expect).
    """
    body_command = (
        r"awk '/^signatures:([ \t\r]|$)/ {exit} {print}' "
        f"{shlex.quote(packet_path)} | sha256sum | cut -d' ' -f1"
    )
    lines = [
        "#!/usr/bin/env bash",
        f"# Independent check of the signatures in {packet_path} with ssh-keygen -Y verify.",
        'work="$(mktemp -d)" && trap \'rm -rf "$work"\' EXIT',
        f"body_sha256=$({body_command})",
        'echo "current body sha256: $body_sha256"',
    ]
    for index, entry in enumerate(entries):
        lines.append("")
        lines.extend(_explain_entry(index, entry, allowed_signers_path))
    return "\n".join(lines) + "\n"


def _explain_entry(
    index: int, entry: Mapping[str, object], allowed_signers_path: str | None
) -> list[str]:
    statement, reason = entry_statement(entry)
    if statement is None:
        return [f"# signatures[{index}]: nothing to check with ssh-keygen: {reason}"]
    try:
        embedded = sshsig.dearmor(str(entry["signature"]))
    except SignatureError as error:
        return [f"# signatures[{index}] ({statement.role}): unreadable signature: {error}"]

    def path(suffix: str) -> str:
        return f'"$work/{index}-{statement.role}.{suffix}"'

    if allowed_signers_path is None:
        signer_line = (
            f'{statement.principal} namespaces="{NAMESPACE}" '
            f"{openssh_public_line(embedded.public_key_blob)}"
        )
        allowed = [
            f"# No allowed_signers file given: trust the key inside the signature, {embedded.fingerprint}.",
            f"printf '%s\\n' {shlex.quote(signer_line)} > {path('allowed')}",
        ]
        allowed_file = path("allowed")
    else:
        allowed, allowed_file = [], shlex.quote(allowed_signers_path)
    return [
        f"# signatures[{index}]: role {statement.role}, principal {statement.principal}, "
        f"decision {statement.decision}, signed {statement.time}",
        f'[ "$body_sha256" = {statement.body_sha256} ] && echo "{statement.role}: body unchanged" '
        f'|| echo "{statement.role}: STALE: the body changed after signing"',
        f"cat > {path('statement')} <<'{_HEREDOC_END}'",
        statement.text().rstrip("\n"),
        _HEREDOC_END,
        f"cat > {path('sig')} <<'{_HEREDOC_END}'",
        sshsig.armor(embedded).rstrip("\n"),  # re-armored: only base64 lines between the markers
        _HEREDOC_END,
        *allowed,
        f"ssh-keygen -Y verify -f {allowed_file} -I {shlex.quote(statement.principal)} "
        f"-n {NAMESPACE} -s {path('sig')} < {path('statement')}",
    ]
