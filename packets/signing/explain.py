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
# Byte-wise (LC_ALL=C) awk over the file, before any ssh-keygen runs: YAML also starts a line at
# a lone CR, NEL, LS and PS, so a `#` comment in the signatures section could carry a whole
# section after one; and nothing but list items, indented lines and comments may follow the
# `signatures:` line. Exit 1 (naming the line, never its text) on either.
_LAYOUT_CHECK = r"""{ line = $0; sub(/\r$/, "", line) }
index(line, "\r") || index(line, "\302\205") || index(line, "\342\200\250") || index(line, "\342\200\251") {
  printf "line %d: a line break other than LF or CRLF (CR, NEL, LS or PS)\n", NR; bad = 1 }
seen && line !~ /^([ \t#]|-$|- |$)/ {
  printf "line %d: text at column 0 follows the signature entries\n", NR; bad = 1 }
!seen && /^signatures:([ \t\r]|$)/ { seen = 1 }
END { exit bad }"""


def explain_commands(
    packet_path: str,
    entries: Sequence[Mapping[str, object]],
    allowed_signers_path: str | None = None,
) -> str:
    """A bash script that re-checks each entry with OpenSSH alone, independent of the workbench.

    First the file's layout (only LF or CRLF line breaks, nothing after the signature entries:
    otherwise it exits 1 before any signature is checked, so ssh-keygen never says "Good" for a
    packet with content outside the signed body). Per entry: compare the body's SHA-256 with the
    statement's, write the statement and the signature to temp files, then `ssh-keygen -Y
    verify`. With `allowed_signers_path` the trusted file is used; without it a one-line file is
    built from the key inside the signature, which proves only that this key signed (compare
    its fingerprint with the one you expect). Exits 0 only when every check passed.
    """
    quoted = shlex.quote(packet_path)
    body_command = (
        r"awk '/^signatures:([ \t\r]|$)/ {exit} {print}' "
        f"{quoted} | sha256sum | cut -d' ' -f1"
    )
    lines = [
        "#!/usr/bin/env bash",
        f"# Independent check of the signatures in {packet_path} with ssh-keygen -Y verify.",
        'work="$(mktemp -d)" && trap \'rm -rf "$work"\' EXIT',
        "status=0",
        "# Nothing may hide outside the signed body: refuse odd line breaks and trailing content.",
        f"if ! LC_ALL=C awk {shlex.quote(_LAYOUT_CHECK)} {quoted}; then",
        '  echo "REFUSED: content outside the signed body; no signature checked"',
        "  exit 1",
        "fi",
        f"body_sha256=$({body_command})",
        'echo "current body sha256: $body_sha256"',
    ]
    for index, entry in enumerate(entries):
        lines.append("")
        lines.extend(_explain_entry(index, entry, allowed_signers_path))
    lines.extend(["", 'exit "$status"'])
    return "\n".join(lines) + "\n"


def _explain_entry(
    index: int, entry: Mapping[str, object], allowed_signers_path: str | None
) -> list[str]:
    statement, reason = entry_statement(entry)
    if statement is None:
        return [f"# signatures[{index}]: nothing to check with ssh-keygen: {reason}", "status=1"]
    try:
        embedded = sshsig.dearmor(str(entry["signature"]))
    except SignatureError as error:
        return [
            f"# signatures[{index}] ({statement.role}): unreadable signature: {error}",
            "status=1",
        ]

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
        f'echo "{statement.role}: decision {statement.decision} (as signed)"',
        f'if [ "$body_sha256" = {statement.body_sha256} ]; then echo "{statement.role}: body '
        f'unchanged"; else echo "{statement.role}: STALE: the body changed after signing"; '
        "status=1; fi",
        f"cat > {path('statement')} <<'{_HEREDOC_END}'",
        statement.text().rstrip("\n"),
        _HEREDOC_END,
        f"cat > {path('sig')} <<'{_HEREDOC_END}'",
        sshsig.armor(embedded).rstrip("\n"),  # re-armored: only base64 lines between the markers
        _HEREDOC_END,
        *allowed,
        f"ssh-keygen -Y verify -f {allowed_file} -I {shlex.quote(statement.principal)} "
        f"-n {NAMESPACE} -s {path('sig')} < {path('statement')} || status=1",
    ]
