"""The approval statement each owner signs: short canonical text binding a decision to a body.

    handoff-packet/1 approval
    packet: PKT-0042
    body-sha256: 64 lowercase hex digits
    role: perf-owner
    principal: alice@example.com
    decision: approve
    time: 2025-03-01T12:00:00Z

Fields in this order, `key: value`, LF line ends, one trailing newline. Decisions: `approve`
(release as proposed), `approve-with-guards` (release only with the validation matrix's
rollback triggers armed), `reject` (do not release). Time is UTC RFC 3339 with seconds and `Z`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from datetime import UTC, datetime

HEADER = "handoff-packet/1 approval"
DECISIONS = ("approve", "approve-with-guards", "reject")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# Printable ASCII, no spaces: ids and roles go into file names and shell commands unquoted.
_PATTERNS = {
    "packet": re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]*"),
    "body-sha256": re.compile(r"[0-9a-f]{64}"),
    "role": re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*"),
    # No commas, quotes or wildcards: a principal must be usable in an allowed_signers line.
    "principal": re.compile(r"[A-Za-z0-9._%+=-]+(@[A-Za-z0-9.-]+)?"),
    "decision": re.compile("|".join(re.escape(d) for d in DECISIONS)),
    "time": re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"),
}


class StatementError(ValueError):
    """An approval statement or one of its values is malformed; the message names the field."""


@dataclass(frozen=True)
class ApprovalStatement:
    """The parsed fields of an approval statement (all plain strings, already validated)."""

    packet: str
    body_sha256: str
    role: str
    principal: str
    decision: str
    time: str

    def text(self) -> str:
        """The canonical statement text: the exact bytes (UTF-8) that are signed."""
        lines = [HEADER] + [f"{_key(f.name)}: {getattr(self, f.name)}" for f in fields(self)]
        return "\n".join(lines) + "\n"

    def signed_at(self) -> datetime:
        """The statement's time as an aware UTC datetime."""
        return datetime.strptime(self.time, TIME_FORMAT).replace(tzinfo=UTC)


def _key(field_name: str) -> str:
    return field_name.replace("_", "-")


def format_time(moment: datetime) -> str:
    """UTC RFC 3339 with seconds and Z; refuses naive datetimes (their zone is unknown)."""
    if moment.tzinfo is None:
        raise StatementError("time: give a timezone-aware datetime (e.g. datetime.now(UTC))")
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def _checked(key: str, value: str) -> str:
    if not isinstance(value, str) or not _PATTERNS[key].fullmatch(value):
        raise StatementError(f"{key}: {value!r} is not a valid {key}")
    if key == "time":
        try:
            datetime.strptime(value, TIME_FORMAT)
        except ValueError:
            raise StatementError(f"time: {value!r} is not a real date and time") from None
    return value


def approval_statement(
    packet_id: str,
    body_sha256: str,
    role: str,
    principal: str,
    decision: str,
    time: datetime | str,
) -> str:
    """The canonical statement text for these values (see the module docstring)."""
    moment = format_time(time) if isinstance(time, datetime) else time
    values = (packet_id, body_sha256, role, principal, decision, moment)
    keys = [_key(f.name) for f in fields(ApprovalStatement)]
    return ApprovalStatement(*(_checked(k, v) for k, v in zip(keys, values, strict=True))).text()


def parse_approval_statement(text: str) -> ApprovalStatement:
    """Parse statement text strictly: header, every field once in order, nothing else."""
    lines = text.splitlines()
    keys = [_key(f.name) for f in fields(ApprovalStatement)]
    if not lines or lines[0] != HEADER:
        raise StatementError(f"statement does not start with {HEADER!r}")
    if len(lines) != len(keys) + 1:
        raise StatementError(f"statement has {len(lines) - 1} field lines, expected {len(keys)}")
    values = []
    for key, line in zip(keys, lines[1:], strict=True):
        name, separator, value = line.partition(": ")
        if name != key or not separator:
            raise StatementError(f"statement line {line!r}: expected '{key}: ...'")
        values.append(_checked(key, value))
    return ApprovalStatement(*values)
