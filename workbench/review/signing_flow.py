"""Signing and exporting from the app (textual-free): the same rules as `workbench sign` and
`workbench export`, applied to the packet under edit.

How signing works from the app: a signature covers the packet file's bytes before
`signatures:`, and the app edits a working packet. So signing (1) refuses while a review guard
blocks or while the file changed on disk since it was opened, (2) saves the working packet first
when it has unsaved edits (canonical bytes, atomic; the screen asks before), (3) signs the saved
file's bytes with `packets.signoff.sign_packet` and writes them atomically under the file's
lock, refusing if the file changed since it was saved or opened (the body is kept byte for byte,
only the signatures section changes), and (4) reloads the packet from the file.
Any later edit changes the current bytes, so every signature then shows as stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packets.errors import UsageError
from packets.load import LoadedPacket, parse_packet
from packets.signing.ssherrors import AgentError, KeyLoadError
from packets.signing.sshkeys import PrivateKey, SshSigner
from packets.signoff import sign_packet
from triage.review.exporting import export_bytes, write_export
from triage.review.guards import blocking, review_guards
from triage.review.writing import update_packet_file
from workbench.core.session import (
    WorkingPacket,
    open_working,
    save_packet,
    sha256_hex,
    source_changed,
)
from workbench.review.state import current_bytes, keep_pending, loaded_from


@dataclass(frozen=True)
class KeyChoice:
    """Which key signs.

    Attributes:
        path: private key file (with `agent`: optional, names which agent key by its public key).
        passphrase: the key file's passphrase ('' for an unencrypted key); never stored.
        agent: sign with ssh-agent ($SSH_AUTH_SOCK) instead of a key file.
    """

    path: Path | None
    passphrase: str = ""
    agent: bool = False


def load_signer(choice: KeyChoice) -> PrivateKey | SshSigner:
    """The key to sign with; UsageError with one line when it cannot be used (unreadable file,
    wrong or missing passphrase, no agent, unsupported key)."""
    from packets.signing.keyfiles import load_private_key, read_public_key_blob
    from packets.signing.sshagent import agent_signer

    def passphrase(prompt: str) -> str:
        if not choice.passphrase:
            raise UsageError(f"{choice.path}: the key is encrypted: type its passphrase")
        return choice.passphrase

    try:
        if choice.agent:
            blob = read_public_key_blob(choice.path) if choice.path else None
            return agent_signer(blob)
        if choice.path is None:
            raise UsageError("give the private key's path, or choose ssh-agent")
        return load_private_key(choice.path, passphrase)
    except (KeyLoadError, AgentError) as exc:
        raise UsageError(str(exc)) from None


def sign_refusal(working: WorkingPacket) -> str:
    """Why signing cannot start now ('' when it can)."""
    if working.source is None:
        return "this packet has no file to sign"
    blocked = blocking(review_guards(working.packet))
    if blocked:
        return "signing refused: review guards block (" + ", ".join(g.id for g in blocked) + ")"
    if source_changed(working):
        return "the packet file changed on disk since it was opened: reopen it, or save over it"
    return ""


def sign_working(working: WorkingPacket, role: str, key: PrivateKey | SshSigner) -> WorkingPacket:
    """Save the working packet if it has unsaved edits, sign the file as `role`, write it and
    return the packet reloaded from the file (typed-but-refused text is kept). UsageError with
    one line when signing is refused or a file cannot be written."""
    refusal = sign_refusal(working)
    if refusal:
        raise UsageError(refusal)
    if working.dirty:
        working = save_packet(working)
    source = working.source
    assert source is not None  # sign_refusal checked it
    shown = working.source_sha256

    def sign_current(current: LoadedPacket) -> bytes:  # under the file's lock
        if sha256_hex(current.raw) != shown:
            raise UsageError("the packet file changed on disk while signing: reopen it")
        try:
            return sign_packet(current, role, key)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    signed = update_packet_file(source, sign_current)
    reloaded = parse_packet(signed, working.name, working.base_dir)
    return keep_pending(open_working(reloaded, source), working)


def export_working(
    working: WorkingPacket, out: Path, fmt: str, *, force: bool = False
) -> Path | None:
    """Export the packet as it stands (`workbench export` rules: refused while a guard blocks,
    never over the packet itself, an existing signed packet only with `force`, backup kept).
    Returns the backup's path when one was kept."""
    data = export_bytes(loaded_from(working, current_bytes(working)), fmt)
    return write_export(data, out, source=working.source, force=force)
