"""Owner signatures on handoff packets: what is signed, how an entry is made, how it is checked.

The body is every byte of the packet file before the top-level `signatures:` key (the writer
puts that key last). Each owner signs an approval statement (`packets.signing.approval`) naming the
packet id and the body's SHA-256 with an SSHSIG in namespace `handoff-packet`; the packet keeps
one entry per owner under `signatures`. Lines are YAML's lines (`LINE_BREAK`: LF, CRLF, CR,
NEL, LS, PS), so nothing can hide after the entries behind a break a LF-only reader misses
(`tail_problems`). One key signs for one owner (`shared_key_roles`). Works on bytes and plain
values; no YAML here.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from packets.signing import sshsig
from packets.signing.allowed_signers import AllowedSigner, check_signer
from packets.signing.approval import (
    DECISIONS,
    ApprovalStatement,
    StatementError,
    approval_statement,
    format_time,
    parse_approval_statement,
)
from packets.signing.ssherrors import SignatureError
from packets.signing.sshkeys import PrivateKey, SshSigner, as_signer, fingerprint

__all__ = [
    "DECISIONS",
    "ENTRY_FIELDS",
    "NAMESPACE",
    "RoleStatus",
    "VerificationReport",
    "approval_statement",
    "body_sha256",
    "entry_statement",
    "line_count",
    "replace_signatures",
    "shared_key_roles",
    "sign_entry",
    "split_body",
    "tail_problems",
    "verify_entries",
    "yaml_lines",
]

NAMESPACE = "handoff-packet"
ENTRY_FIELDS = (
    "role",
    "principal",
    "key_fingerprint",
    "time",
    "decision",
    "statement",
    "signature",
)
# Tolerated lead of a statement's time over the verifier's clock: Kerberos' default 5 minutes.
MAX_CLOCK_SKEW = timedelta(minutes=5)
# YAML's line breaks (YAML 1.1, which PyYAML follows; see /work/shared/NOTES.md): CRLF, CR, LF,
# NEL (U+0085), LS (U+2028), PS (U+2029), as UTF-8 bytes. A check that splits on LF alone can be
# walked around: a `#` comment "line" may carry whole YAML sections after a CR.
LINE_BREAK = rb"\r\n|\r|\n|\xc2\x85|\xe2\x80\xa8|\xe2\x80\xa9"
_LINE_BREAK = re.compile(LINE_BREAK)
BREAK_NAMES = {
    b"\r": "CR",
    b"\xc2\x85": "NEL (U+0085)",
    b"\xe2\x80\xa8": "LS (U+2028)",
    b"\xe2\x80\xa9": "PS (U+2029)",
}
# The start of a YAML line: the start of the file or just after any line break.
_LINE_START = rb"(?:\A|(?<=\n)|(?<=\r)|(?<=\xc2\x85)|(?<=\xe2\x80\xa8)|(?<=\xe2\x80\xa9))"
# `signatures:` at column 0 followed by a blank, a line break or the end of the file. Inside a
# block scalar or a nested mapping the key is indented, so it cannot match.
_SIGNATURES_KEY = re.compile(_LINE_START + rb"signatures:(?=[ \t]|" + LINE_BREAK + rb"|\Z)")

Status = Literal["missing", "valid", "stale", "invalid", "not-allowed"]


def split_body(data: bytes) -> tuple[bytes, bytes]:
    """(body, tail): the bytes before the top-level `signatures:` line, and that line onwards.

    A line starts after any YAML line break (`LINE_BREAK`), as a YAML parser sees it. Without
    such a line the whole file is the body and the tail is empty.
    """
    match = _SIGNATURES_KEY.search(data)
    if match is None:
        return data, b""
    return data[: match.start()], data[match.start() :]


def line_count(data: bytes) -> int:
    """How many YAML line breaks `data` holds (CRLF counts once), as a YAML parser counts."""
    return len(_LINE_BREAK.findall(data))


def yaml_lines(data: bytes) -> list[tuple[bytes, bytes]]:
    """(line, line break) pairs, splitting at every YAML line break; the last line's break is
    b'' (and that line is empty when `data` ends with a break)."""
    lines, start = [], 0
    for match in _LINE_BREAK.finditer(data):
        lines.append((data[start : match.start()], match.group()))
        start = match.end()
    lines.append((data[start:], b""))
    return lines


def _continues_section(line: bytes) -> bool:
    """A line that can only belong to the signatures section: blank, indented, a comment, or a
    list item at column 0 (the writer's indentless sequence)."""
    return not line or line[:1] in b" \t#" or line == b"-" or line[:2] == b"- "


def tail_problems(data: bytes) -> tuple[str, ...]:
    """Why the bytes from the `signatures:` key on are more than the signature entries: a line
    break other than LF or CRLF (YAML starts a new line at CR, NEL, LS and PS, so a comment could
    carry a whole section after one), or a line at column 0 that is not a list item or comment
    (another top-level key, a new document). Either would escape the signatures, so
    verification refuses the packet. Never quotes the file's text."""
    body, tail = split_body(data)
    first = line_count(body) + 1  # line number of the signatures key
    problems = []
    for number, (line, brk) in enumerate(yaml_lines(tail), start=first):
        if brk in BREAK_NAMES:
            problems.append(
                f"line {number}: a {BREAK_NAMES[brk]} line break in the signatures section; "
                "YAML starts a new line there, so only LF or CRLF may end its lines"
            )
        if number > first and not _continues_section(line):
            problems.append(
                f"line {number}: text at column 0 follows the signature entries; the top-level "
                "signatures key must come last and hold only its entries"
            )
    return tuple(problems)


def replace_signatures(packet_bytes: bytes, signatures_yaml: bytes) -> bytes:
    """The packet with its `signatures:` key (and all after it) replaced by `signatures_yaml`.

    The body's bytes are kept exactly: re-dumping the whole YAML would change them and make
    every signature stale. `signatures_yaml` must start with `signatures:` at column 0.
    """
    body, _ = split_body(packet_bytes)
    if body and not body.endswith(b"\n"):
        raise ValueError("the packet must end with a newline before `signatures:`")
    result = body + signatures_yaml
    if split_body(result)[0] != body:
        raise ValueError("signatures_yaml must start with 'signatures:' at column 0")
    problems = tail_problems(result)
    if problems:
        raise ValueError(f"signatures_yaml: {problems[0]}")
    return result


def body_sha256(data: bytes) -> str:
    """Lowercase hex SHA-256 of the packet's body (see `split_body`)."""
    return hashlib.sha256(split_body(data)[0]).hexdigest()


def sign_entry(
    packet_bytes: bytes,
    packet_id: str,
    role: str,
    principal: str,
    decision: str,
    key: PrivateKey | SshSigner,
    time: datetime | None = None,
) -> dict[str, str]:
    """The `signatures` entry for one owner's approval of this packet's current body.

    `key` is a private key (`packets.signing.keyfiles.load_private_key`) or an ssh-agent signer
    (`packets.signing.sshagent.agent_signer`); `time` defaults to now, UTC, to the second.
    """
    problems = tail_problems(packet_bytes)
    if problems:
        raise ValueError(f"cannot sign: {problems[0]}")
    body, _ = split_body(packet_bytes)
    if body and not body.endswith(b"\n"):
        raise ValueError("cannot sign: the packet must end with a newline before `signatures:`")
    moment = format_time(time or datetime.now(UTC))
    statement = approval_statement(
        packet_id, body_sha256(packet_bytes), role, principal, decision, moment
    )
    signer = as_signer(key)
    return {
        "role": role,
        "principal": principal,
        "key_fingerprint": fingerprint(signer.public_key_blob),
        "time": moment,
        "decision": decision,
        "statement": statement,
        "signature": sshsig.sign(statement.encode(), signer, NAMESPACE),
    }


@dataclass(frozen=True)
class RoleStatus:
    """The verdict on one owner role's signature; `reason` is one line."""

    role: str
    principal: str  # the owner list's principal for the role
    status: Status
    reason: str
    decision: str | None = None
    key_fingerprint: str | None = None
    time: str | None = None


@dataclass(frozen=True)
class VerificationReport:
    """Every owner role's status plus packet-level problems.

    `keys_checked` is False when no allowed_signers file was given: then a valid signature only
    proves that the key inside it signed, not that the key belongs to the principal.
    """

    roles: tuple[RoleStatus, ...]
    problems: tuple[str, ...]
    keys_checked: bool

    @property
    def ok(self) -> bool:
        """Every owner role has a valid signature over the current body, and nothing else."""
        return not self.problems and all(r.status == "valid" for r in self.roles)

    @property
    def approved(self) -> bool:
        """`ok`, every key checked against allowed signers, and no owner decided `reject`."""
        return not self.failures()

    @property
    def reasons(self) -> tuple[str, ...]:
        """One line per failing role (`role: status: reason`) and per packet-level problem."""
        failing = [f"{r.role}: {r.status}: {r.reason}" for r in self.roles if r.status != "valid"]
        return (*failing, *self.problems)

    def failures(self, *, signatures_only: bool = False) -> tuple[str, ...]:
        """Why the packet does not verify, one short line each (empty when it does).

        In full (the default) a packet verifies when every owner role has a valid signature
        over the current body, every key was checked against allowed signers for its principal,
        and no owner decided `reject`. `signatures_only` drops the last two: the signatures are
        valid, whoever's keys they are and whatever they decided.
        """
        found = [f"{r.role}: {r.status}" for r in self.roles if r.status != "valid"]
        found += self.problems
        if signatures_only:
            return tuple(found)
        if not self.keys_checked:
            found.append("identity not checked: no allowed signers")
        found += [
            f"{r.role}: {r.principal} rejected"
            for r in self.roles
            if r.status == "valid" and r.decision == "reject"
        ]
        return tuple(found)


def shared_key_roles(
    owners: Mapping[str, str], keys: Mapping[str, str], role: str, key_fingerprint: str
) -> tuple[str, ...]:
    """Roles other than `role` signed (per `keys`, role -> key fingerprint) by `key_fingerprint`
    although the owner list binds them to a principal other than `role`'s: one key signs for
    one owner, so signing `role` with this key must be refused."""
    return tuple(
        other
        for other, signed_with in keys.items()
        if other != role and signed_with == key_fingerprint and owners.get(other) != owners[role]
    )


def _shared_key_problems(owners: Mapping[str, str], roles: Sequence[RoleStatus]) -> list[str]:
    """One line per pair of roles of different principals signed by the same key. Only roles
    whose signature verified count: their recorded fingerprint is the key that signed."""
    keys = {
        r.role: r.key_fingerprint
        for r in roles
        if r.status in ("valid", "stale", "not-allowed") and r.key_fingerprint
    }
    items, problems = list(keys.items()), []
    for index, (role, key) in enumerate(items):
        for other in shared_key_roles(owners, dict(items[:index]), role, key):
            problems.append(
                f"roles {other} and {role} are signed by the same key {key}, but the owner "
                f"list binds them to {owners[other]} and {owners[role]}: one key, one owner"
            )
    return problems


def entry_statement(entry: Mapping[str, object]) -> tuple[ApprovalStatement | None, str]:
    """(statement, '') or (None, reason): checks an entry's fields, parses its statement, and
    requires the fields the entry repeats (role, principal, decision, time) to match it."""
    loaded_time = entry.get("time")
    if isinstance(loaded_time, datetime):  # an unquoted YAML timestamp loads as a datetime
        try:
            entry = {**entry, "time": format_time(loaded_time)}
        except StatementError as error:
            return None, f"entry {error}"
    absent = [f for f in ENTRY_FIELDS if not isinstance(entry.get(f), str)]
    if absent:
        return None, f"entry has no text for {', '.join(absent)}"
    try:
        statement = parse_approval_statement(str(entry["statement"]))
    except StatementError as error:
        return None, f"statement: {error}"
    for field in ("role", "principal", "decision", "time"):
        signed = getattr(statement, field)
        if entry[field] != signed:
            return None, f"entry says {field} {entry[field]!r} but the signed statement {signed!r}"
    return statement, ""


def _check_entry(
    entry: Mapping[str, object],
    principal: str,
    packet_id: str,
    current_sha256: str,
    allowed_signers: tuple[AllowedSigner, ...] | None,
    now: datetime,
) -> tuple[Status, str]:
    statement, reason = entry_statement(entry)
    if statement is None:
        return "invalid", reason
    if statement.principal != principal:
        return "invalid", f"role {statement.role} belongs to {principal}, not {statement.principal}"
    if statement.packet != packet_id:
        return (
            "invalid",
            f"statement is for packet {statement.packet!r}, not {packet_id!r} (replayed?)",
        )
    if statement.signed_at() > now + MAX_CLOCK_SKEW:
        return "invalid", f"statement is dated {statement.time}, in the future"
    try:
        verified = sshsig.verify(statement.text().encode(), str(entry["signature"]), NAMESPACE)
    except SignatureError as error:
        return "invalid", f"signature: {error}"
    if verified.fingerprint != entry["key_fingerprint"]:
        return (
            "invalid",
            f"entry names key {entry['key_fingerprint']}, signed by {verified.fingerprint}",
        )
    if allowed_signers is not None:
        check = check_signer(allowed_signers, principal, verified.public_key_blob, NAMESPACE, now)
        if not check.allowed:
            return "not-allowed", check.reason
    if statement.body_sha256 != current_sha256:
        return "stale", (
            f"signed body sha256 {statement.body_sha256[:12]}..., "
            f"current body {current_sha256[:12]}...: the packet changed after signing"
        )
    return "valid", f"{verified.key_type} key {verified.fingerprint}"


def verify_entries(
    packet_bytes: bytes,
    packet_id: str,
    owners: Mapping[str, str],
    entries: Sequence[Mapping[str, object]],
    allowed_signers: tuple[AllowedSigner, ...] | None = None,
    now: datetime | None = None,
) -> VerificationReport:
    """Check every owner role's signature entry against this packet's bytes.

    `owners` maps role -> principal (the packet's owner list); `entries` are the `signatures`
    list as parsed; `allowed_signers` from `packets.signing.allowed_signers`; `now` (aware, default the
    current time) is when keys' validity windows and future-dated statements are judged, as
    `ssh-keygen -Y verify` judges them at its current time.
    """
    now = now or datetime.now(UTC)
    current = body_sha256(packet_bytes)
    problems = list(tail_problems(packet_bytes))
    by_role: dict[str, list[Mapping[str, object]]] = {}
    for index, entry in enumerate(entries):
        role = entry.get("role") if isinstance(entry, Mapping) else None
        if not isinstance(role, str) or role not in owners:
            problems.append(f"signatures[{index}]: role {role!r} is not an owner role")
            continue
        by_role.setdefault(role, []).append(entry)
    statuses = []
    for role, principal in owners.items():
        found = by_role.get(role, [])
        status: Status
        if not found:
            status, reason = "missing", f"no signature from {principal}"
        elif len(found) > 1:
            status, reason = "invalid", f"{len(found)} signature entries; keep exactly one"
        else:
            status, reason = _check_entry(
                found[0], principal, packet_id, current, allowed_signers, now
            )
        entry = found[0] if len(found) == 1 else {}
        statuses.append(
            RoleStatus(
                role=role,
                principal=principal,
                status=status,
                reason=reason,
                decision=_text_or_none(entry.get("decision")),
                key_fingerprint=_text_or_none(entry.get("key_fingerprint")),
                time=_text_or_none(entry.get("time")),
            )
        )
    problems += _shared_key_problems(owners, statuses)
    return VerificationReport(tuple(statuses), tuple(problems), allowed_signers is not None)


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
