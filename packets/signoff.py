"""Signing a packet file and verifying its signatures, at the level of packets (not bytes).

`sign_packet` returns the new file bytes: the body before `signatures:` is kept byte for byte
(comments included), and only the signatures section is rewritten, canonically.
"""

from __future__ import annotations

from datetime import datetime

from .dump import dump_yaml
from .load import LoadedPacket
from .signing.allowed_signers import AllowedSigner
from .signing.packet import VerificationReport, replace_signatures, sign_entry, verify_entries
from .signing.sshkeys import PrivateKey, SshSigner


def owner_principals(loaded: LoadedPacket) -> dict[str, str]:
    """Role -> principal, from the packet's owner list."""
    return {owner.role: owner.principal for owner in loaded.packet.owners}


def signature_entries(loaded: LoadedPacket) -> list[dict[str, str]]:
    """The packet's signature entries as plain mappings, in file order."""
    return [entry.model_dump() for entry in loaded.packet.signatures]


def sign_packet(
    loaded: LoadedPacket,
    role: str,
    key: PrivateKey | SshSigner,
    *,
    principal: str | None = None,
    decision: str = "approve",
    time: datetime | None = None,
) -> bytes:
    """File bytes with `role`'s signature added (or replacing that role's earlier one).

    Raises ValueError with a one-line reason when the role has no owner or the principal given
    is not the one the owner list binds to the role.
    """
    owners = owner_principals(loaded)
    if role not in owners:
        raise ValueError(f"no owner holds role '{role}' (roles: {', '.join(owners)})")
    if principal is not None and principal != owners[role]:
        raise ValueError(
            f"principal '{principal}' does not hold role '{role}': the owner list binds it to "
            f"'{owners[role]}'"
        )
    entry = sign_entry(loaded.raw, loaded.packet.id, role, owners[role], decision, key, time=time)
    entries = [e for e in signature_entries(loaded) if e["role"] != role] + [entry]
    order = {owner.role: i for i, owner in enumerate(loaded.packet.owners)}
    entries.sort(key=lambda e: order.get(str(e["role"]), len(order)))
    return replace_signatures(loaded.raw, dump_yaml({"signatures": entries}))


def verify_packet(
    loaded: LoadedPacket,
    allowed_signers: tuple[AllowedSigner, ...] | None = None,
    now: datetime | None = None,
) -> VerificationReport:
    """Every owner role's signature state over the packet's current body."""
    return verify_entries(
        loaded.raw,
        loaded.packet.id,
        owner_principals(loaded),
        signature_entries(loaded),
        allowed_signers,
        now=now,
    )
