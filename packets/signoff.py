"""Signing a packet file and verifying its signatures, at the level of packets (not bytes).

`sign_packet` returns the new file bytes: the body before `signatures:` is kept byte for byte
(comments included), and only the signatures section is rewritten, canonically.

`verify_packet` reads the signature list from the bytes it hashes: the body (everything before
`signatures:`) and the signatures section are each parsed on their own, and together they must
be exactly the packet that was loaded. Content that only the whole-file parse sees (a section
smuggled after the entries, say behind a CR inside a comment) fails verification.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from .dump import dump_yaml
from .errors import PacketError
from .load import LoadedPacket
from .schema import Packet
from .signing.allowed_signers import AllowedSigner
from .signing.packet import (
    VerificationReport,
    line_count,
    replace_signatures,
    shared_key_roles,
    sign_entry,
    split_body,
    verify_entries,
)
from .signing.sshkeys import PrivateKey, SshSigner, as_signer, fingerprint
from .strict_yaml import load_yaml


def owner_principals(loaded: LoadedPacket) -> dict[str, str]:
    """Role -> principal, from the packet's owner list."""
    return {owner.role: owner.principal for owner in loaded.packet.owners}


def signature_entries(loaded: LoadedPacket) -> list[dict[str, str]]:
    """The packet's signature entries as plain mappings, in file order."""
    return [entry.model_dump() for entry in loaded.packet.signatures]


@lru_cache(maxsize=8)  # the app re-checks the same bytes at every refresh of its Review step
def _parse_alone(data: bytes, name: str, first_line: int) -> tuple[Any, str]:
    """(data, '') or (None, why): `data` parsed as YAML by itself, the reason's line numbers
    counted from `first_line` (where the bytes start in the file). Cached: callers must not
    change what it returns."""
    try:
        return load_yaml(data, name).data, ""
    except PacketError as error:
        problem = error.problems[0]
        line = problem.line + first_line - 1 if problem.line else first_line
        return None, f"line {line}: {problem.message}"


def _same_packet(data: Any, packet: Packet) -> bool:
    """Whether `data` (parsed YAML) validates to exactly `packet`."""
    try:
        return Packet.model_validate(data) == packet
    except ValidationError:
        return False


def signature_section(loaded: LoadedPacket) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """(entries, problems): the signature list parsed from the signatures section's own bytes,
    and why those bytes and the body are not, together, exactly the packet that was loaded.

    The body is what the signatures hash; the section is what they are read from. Each is
    parsed alone; the body must hold no `signatures` key, the section nothing but it, and the
    two together must validate to `loaded.packet`, so nothing the packet says (a release
    recommendation, say) comes from outside the signed body. Entries are read-only mappings;
    problems are one line each and never quote the file.
    """
    body, tail = split_body(loaded.raw)
    problems: list[str] = []
    head: Any = {}
    if body.strip():
        head, why = _parse_alone(body, loaded.name, 1)
        if why:
            problems.append(f"the body before signatures: does not parse on its own: {why}")
    if isinstance(head, dict) and "signatures" in head:
        problems.append("the body holds a signatures key: write `signatures:` at column 0, last")
    section: Any = {}
    if tail:
        section, why = _parse_alone(tail, loaded.name, line_count(body) + 1)
        if why:
            problems.append(f"the signatures section does not parse on its own: {why}")
        elif not isinstance(section, dict) or set(section) != {"signatures"}:
            problems.append("the signatures section holds more than the signatures key")
    section = section if isinstance(section, dict) else {}
    entries = section.get("signatures") or []
    if not isinstance(entries, list):
        problems.append("signatures is not a list of entries")
        entries = []
    if not problems and not _same_packet({**head, **section}, loaded.packet):
        problems.append(
            "the packet as loaded is not its body plus its signatures: content outside the "
            "signed body is read as part of the packet"
        )
    frozen = (MappingProxyType(e) if isinstance(e, dict) else e for e in entries)
    return tuple(frozen), tuple(problems)


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

    Raises ValueError with a one-line reason when the role has no owner, the principal given
    is not the one the owner list binds to the role, or the key already signs another owner's
    role (one key, one owner: allowed only when the owner list binds both roles to the same
    principal).
    """
    owners = owner_principals(loaded)
    if role not in owners:
        raise ValueError(f"no owner holds role '{role}' (roles: {', '.join(owners)})")
    if principal is not None and principal != owners[role]:
        raise ValueError(
            f"principal '{principal}' does not hold role '{role}': the owner list binds it to "
            f"'{owners[role]}'"
        )
    signer = as_signer(key)
    key_fingerprint = fingerprint(signer.public_key_blob)
    earlier = signature_entries(loaded)
    keys = {str(e["role"]): str(e["key_fingerprint"]) for e in earlier}
    shared = shared_key_roles(owners, keys, role, key_fingerprint)
    if shared:
        raise ValueError(
            f"key {key_fingerprint} already signs role '{shared[0]}' ({owners[shared[0]]}); "
            f"one key signs for one owner, so it cannot sign role '{role}' ({owners[role]})"
        )
    entry = sign_entry(
        loaded.raw, loaded.packet.id, role, owners[role], decision, signer, time=time
    )
    entries = [e for e in earlier if e["role"] != role] + [entry]
    order = {owner.role: i for i, owner in enumerate(loaded.packet.owners)}
    entries.sort(key=lambda e: order.get(str(e["role"]), len(order)))
    return replace_signatures(loaded.raw, dump_yaml({"signatures": entries}))


def verify_packet(
    loaded: LoadedPacket,
    allowed_signers: tuple[AllowedSigner, ...] | None = None,
    now: datetime | None = None,
) -> VerificationReport:
    """Every owner role's signature state over the packet's current body, the entries read
    from the signatures section's own bytes (see `signature_section`)."""
    entries, problems = signature_section(loaded)
    report = verify_entries(
        loaded.raw,
        loaded.packet.id,
        owner_principals(loaded),
        entries,
        allowed_signers,
        now=now,
    )
    return replace(report, problems=(*report.problems, *problems))
