"""Packet-level signing: body split, approval statements, sign_entry and verify_entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from packets.signing import sshsig
from packets.signing.allowed_signers import parse_allowed_signers
from packets.signing.approval import StatementError, approval_statement, parse_approval_statement
from packets.signing.packet import (
    ENTRY_FIELDS,
    NAMESPACE,
    body_sha256,
    replace_signatures,
    sign_entry,
    split_body,
    tail_problems,
    verify_entries,
)
from tests.signing.conftest import ssh_keygen_sign
from tests.signing.sample import (
    BODY,
    KIND_OF_ROLE,
    NOW,
    OWNERS,
    PACKET_ID,
    SIGNED_AT,
    packet_with,
    sign_all,
)


@pytest.fixture(scope="module")
def signed(keys) -> tuple[bytes, list[dict]]:
    """A packet signed by all three owners, after a YAML round trip."""
    return packet_with(BODY, sign_all(keys))


def allowed_line(keys, role: str, options: str = "") -> str:
    """An allowed_signers line trusting the role's key for its principal."""
    return " ".join(p for p in (OWNERS[role], options, keys[KIND_OF_ROLE[role]].public_line) if p)


def statuses(report) -> dict[str, str]:
    return {r.role: r.status for r in report.roles}


# --- the body ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "body"),
    [
        (b"a: 1\nsignatures:\n- x: 1\n", b"a: 1\n"),
        (b"a: 1\r\nsignatures:\r\n- x: 1\r\n", b"a: 1\r\n"),
        (b"a: 1\nsignatures: []", b"a: 1\n"),
        (b"a: 1\nsignatures:", b"a: 1\n"),
        (b"signatures:\n", b""),
        (b"a:\n  signatures: 1\nb: 2\n", b"a:\n  signatures: 1\nb: 2\n"),
        (b"a: |\n  signatures: x\nsignatures:\n", b"a: |\n  signatures: x\n"),
        (
            b"signatures:x: 1\nsignaturesx: 2\nxsignatures: 3\n",
            b"signatures:x: 1\nsignaturesx: 2\nxsignatures: 3\n",
        ),
        (b"a: 1\n", b"a: 1\n"),
    ],
)
def test_split_body_stops_at_the_top_level_signatures_key(data: bytes, body: bytes) -> None:
    head, tail = split_body(data)
    assert head == body
    assert head + tail == data


def test_anything_top_level_after_signatures_is_a_problem(signed, keys) -> None:
    data, entries = signed
    assert tail_problems(data) == ()
    for extra in (b"title: changed\n", b"---\n"):
        problems = tail_problems(data + extra)
        assert len(problems) == 1 and "text at column 0 follows the signature" in problems[0]
        assert extra.strip().decode() not in problems[0]  # the file's text is never echoed
        first_extra_line = data.count(b"\n") + 1
        assert problems[0].startswith(f"line {first_extra_line}: ")
        report = verify_entries(data + extra, PACKET_ID, OWNERS, entries, now=NOW)
        assert statuses(report) == dict.fromkeys(OWNERS, "valid") and not report.ok
    with pytest.raises(ValueError, match="cannot sign: line"):
        sign_entry(
            data + b"title: x\n",
            PACKET_ID,
            "release",
            OWNERS["release"],
            "approve",
            keys["ed25519"].private_key,
        )


def test_replacing_signatures_keeps_the_body_bytes(signed, keys) -> None:
    data, entries = signed
    fewer = replace_signatures(data, b"signatures:\n- role: x\n")
    assert split_body(fewer) == (BODY, b"signatures:\n- role: x\n")
    assert verify_entries(fewer, PACKET_ID, OWNERS, entries, now=NOW).ok
    with pytest.raises(ValueError, match="must start with 'signatures:'"):
        replace_signatures(data, b"- role: x\n")
    title_line = BODY.count(b"\n") + 2  # the body's lines, then `signatures: []`
    with pytest.raises(ValueError, match=f"line {title_line}: text at column 0 follows"):
        replace_signatures(data, b"signatures: []\ntitle: x\n")
    with pytest.raises(ValueError, match="must end with a newline"):
        replace_signatures(b"a: 1", b"signatures: []\n")
    with pytest.raises(ValueError, match="cannot sign: the packet must end with a newline"):
        sign_entry(b"a: 1", PACKET_ID, "release", "carol", "approve", keys["ed25519"].private_key)


# --- the statement -----------------------------------------------------------------------------


def test_statement_is_canonical_text() -> None:
    text = approval_statement(
        PACKET_ID, "ab" * 32, "perf-owner", "alice@example.com", "approve-with-guards", SIGNED_AT
    )
    assert text == (
        "handoff-packet/1 approval\n"
        "packet: PKT-0042\n"
        f"body-sha256: {'ab' * 32}\n"
        "role: perf-owner\n"
        "principal: alice@example.com\n"
        "decision: approve-with-guards\n"
        "time: 2025-06-01T11:00:00Z\n"
    )
    assert parse_approval_statement(text).text() == text
    offset = datetime(2025, 6, 1, 13, 0, tzinfo=UTC).astimezone(tz=None)
    same = approval_statement(
        PACKET_ID,
        "ab" * 32,
        "perf-owner",
        "alice@example.com",
        "approve-with-guards",
        offset - timedelta(hours=2),
    )
    assert same == text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.replace("handoff-packet/1", "handoff-packet/2"), "does not start with"),
        (lambda t: t.replace("decision: approve", "decision: maybe"), "not a valid decision"),
        (lambda t: t + "extra: 1\n", "7 field lines, expected 6"),
        (
            lambda t: t.replace(
                "role: perf-owner\nprincipal: alice@example.com",
                "principal: alice@example.com\nrole: perf-owner",
            ),
            "expected 'role: ...'",
        ),
        (lambda t: t.replace("2025-06-01T11", "2025-02-30T11"), "not a real date"),
        (lambda t: t.replace("T11:00:00Z", "T11:00:00+00:00"), "not a valid time"),
        (
            lambda t: t.replace("alice@example.com", "alice@example.com,bob"),
            "not a valid principal",
        ),
        (lambda t: t.replace("ab" * 32, "AB" * 32), "not a valid body-sha256"),
    ],
)
def test_malformed_statements_name_the_field(change, message) -> None:
    text = approval_statement(
        PACKET_ID, "ab" * 32, "perf-owner", "alice@example.com", "approve", SIGNED_AT
    )
    with pytest.raises(StatementError, match=message):
        parse_approval_statement(change(text))


def test_statement_values_are_validated() -> None:
    with pytest.raises(StatementError, match="timezone-aware"):
        approval_statement(PACKET_ID, "ab" * 32, "r", "p", "approve", datetime(2025, 1, 1))
    with pytest.raises(StatementError, match="packet: 'PKT 1' is not a valid packet"):
        approval_statement("PKT 1", "ab" * 32, "r", "p", "approve", SIGNED_AT)


# --- verification ------------------------------------------------------------------------------


def test_fully_signed_packet_verifies(signed, keys) -> None:
    data, entries = signed
    report = verify_entries(data, PACKET_ID, OWNERS, entries, now=NOW)
    assert report.ok and not report.keys_checked and report.reasons == ()
    assert not report.approved  # valid signatures, but whose keys they are is unchecked
    assert report.failures() == ("identity not checked: no allowed signers",)
    assert report.failures(signatures_only=True) == ()
    assert [(r.role, r.decision, r.time) for r in report.roles] == [
        (role, "approve", "2025-06-01T11:00:00Z") for role in OWNERS
    ]
    trusted = parse_allowed_signers("\n".join(allowed_line(keys, role) for role in OWNERS))
    checked = verify_entries(data, PACKET_ID, OWNERS, entries, trusted, now=NOW)
    assert checked.ok and checked.keys_checked and checked.approved and checked.failures() == ()


def test_entry_fields_are_what_was_signed(signed, keys) -> None:
    _, entries = signed
    entry = entries[0]
    assert list(entry) == [
        "role",
        "principal",
        "key_fingerprint",
        "time",
        "decision",
        "statement",
        "signature",
    ]
    statement = parse_approval_statement(entry["statement"])
    assert statement.body_sha256 == body_sha256(BODY + b"signatures: []\n")
    verified = sshsig.verify(entry["statement"].encode(), entry["signature"], NAMESPACE)
    assert verified.fingerprint == entry["key_fingerprint"]


def test_missing_signature_is_reported(signed) -> None:
    data, entries = signed
    report = verify_entries(data, PACKET_ID, OWNERS, entries[:2], now=NOW)
    assert statuses(report)["release"] == "missing" and not report.ok
    assert report.reasons == ("release: missing: no signature from carol@example.com",)


@settings(max_examples=80, deadline=None)
@given(position=st.integers(min_value=0, max_value=len(BODY) - 1), new=st.integers(0, 255))
def test_flipping_any_body_byte_makes_every_signature_stale(
    signed, position: int, new: int
) -> None:
    data, entries = signed
    tampered = bytearray(data)
    tampered[position] = new if new != data[position] else (new + 1) % 256
    report = verify_entries(bytes(tampered), PACKET_ID, OWNERS, entries, now=NOW)
    assert statuses(report) == dict.fromkeys(OWNERS, "stale")
    assert not report.ok and all("changed after signing" in r.reason for r in report.roles)


def test_swapping_two_signatures_roles_fails(signed) -> None:
    data, entries = signed
    swapped = [dict(e) for e in entries]
    swapped[0]["role"], swapped[1]["role"] = swapped[1]["role"], swapped[0]["role"]
    report = verify_entries(data, PACKET_ID, OWNERS, swapped, now=NOW)
    assert statuses(report) == {"perf-owner": "invalid", "compiler": "invalid", "release": "valid"}
    assert (
        "entry says role 'compiler' but the signed statement 'perf-owner'" in report.roles[1].reason
    )


def test_a_signature_replayed_from_another_packet_fails(signed, keys) -> None:
    data, entries = signed
    other = sign_all(keys, packet_id="PKT-0099")  # same owners, same body, other packet
    report = verify_entries(data, PACKET_ID, OWNERS, [*entries[:2], other[2]], now=NOW)
    assert statuses(report)["release"] == "invalid"
    assert "statement is for packet 'PKT-0099', not 'PKT-0042' (replayed?)" in report.reasons[0]


def test_wrong_namespace_fails(signed, keys) -> None:
    data, entries = signed
    forged = dict(
        entries[0],
        signature=sshsig.sign(entries[0]["statement"].encode(), keys["ed25519"].private_key, "git"),
    )
    report = verify_entries(data, PACKET_ID, OWNERS, [forged, *entries[1:]], now=NOW)
    assert report.roles[0].status == "invalid"
    assert "namespace 'git', expected 'handoff-packet'" in report.roles[0].reason


def test_key_not_in_allowed_signers_is_not_allowed(signed, keys) -> None:
    data, entries = signed
    trusted = parse_allowed_signers(
        allowed_line(keys, "perf-owner") + "\n" + allowed_line(keys, "compiler")
    )
    report = verify_entries(data, PACKET_ID, OWNERS, entries, trusted, now=NOW)
    assert statuses(report) == {
        "perf-owner": "valid",
        "compiler": "valid",
        "release": "not-allowed",
    }
    assert report.roles[2].reason.endswith("is not allowed for carol@example.com")


def test_expired_or_wrong_namespace_key_is_not_allowed(signed, keys) -> None:
    data, entries = signed
    trusted = parse_allowed_signers(
        "\n".join(
            [
                allowed_line(keys, "perf-owner", 'valid-before="20250501Z"'),
                allowed_line(keys, "compiler", 'namespaces="git"'),
                allowed_line(keys, "release"),
            ]
        ),
        "team",
    )
    report = verify_entries(data, PACKET_ID, OWNERS, entries, trusted, now=NOW)
    assert statuses(report) == {
        "perf-owner": "not-allowed",
        "compiler": "not-allowed",
        "release": "valid",
    }
    assert report.roles[0].reason == "team:1: key expired at 2025-05-01T00:00:00Z"


def test_signer_must_be_the_roles_owner(keys) -> None:
    forged = sign_entry(
        BODY,
        PACKET_ID,
        "release",
        "mallory@example.com",
        "approve",
        keys["ed25519"].private_key,
        SIGNED_AT,
    )
    data, entries = packet_with(BODY, [*sign_all(keys)[:2], forged])
    report = verify_entries(data, PACKET_ID, OWNERS, entries, now=NOW)
    assert (
        report.roles[2].reason
        == "role release belongs to carol@example.com, not mallory@example.com"
    )


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("decision", "reject", "entry says decision 'reject' but the signed statement 'approve'"),
        ("time", "2025-06-01T10:00:00Z", "entry says time"),
        ("key_fingerprint", "SHA256:AAAA", "entry names key SHA256:AAAA, signed by SHA256:"),
        ("signature", "garbage", "signature: signature does not start with"),
        ("statement", "hello", "statement: statement does not start with"),
        ("principal", None, "entry has no text for principal"),
    ],
)
def test_edited_entries_are_invalid(signed, field, value, reason) -> None:
    data, entries = signed
    edited = dict(entries[1], **{field: value})
    report = verify_entries(data, PACKET_ID, OWNERS, [entries[0], edited, entries[2]], now=NOW)
    assert report.roles[1].status == "invalid" and reason in report.roles[1].reason


def test_an_unquoted_yaml_timestamp_still_matches(signed) -> None:
    data, entries = signed
    loaded = yaml.safe_load(f"time: {entries[0]['time']}")["time"]
    assert isinstance(loaded, datetime)
    report = verify_entries(
        data, PACKET_ID, OWNERS, [dict(entries[0], time=loaded), *entries[1:]], now=NOW
    )
    assert report.ok
    naive = dict(entries[0], time=loaded.replace(tzinfo=None))
    report = verify_entries(data, PACKET_ID, OWNERS, [naive, *entries[1:]], now=NOW)
    assert "entry time: give a timezone-aware datetime" in report.roles[0].reason


def test_truncated_signature_is_invalid(signed) -> None:
    data, entries = signed
    cut = dict(entries[2], signature=entries[2]["signature"][:200])
    report = verify_entries(data, PACKET_ID, OWNERS, [*entries[:2], cut], now=NOW)
    assert report.roles[2].status == "invalid" and "truncated?" in report.roles[2].reason


def test_statements_dated_in_the_future_are_invalid_beyond_clock_skew(keys) -> None:
    key = keys["ed25519"].private_key
    for ahead, status in [(timedelta(minutes=4), "valid"), (timedelta(minutes=6), "invalid")]:
        entry = sign_entry(
            BODY, PACKET_ID, "perf-owner", OWNERS["perf-owner"], "approve", key, NOW + ahead
        )
        data, entries = packet_with(BODY, [entry])
        assert verify_entries(data, PACKET_ID, OWNERS, entries, now=NOW).roles[0].status == status


def test_duplicate_and_unknown_role_entries(signed) -> None:
    data, entries = signed
    stranger = dict(entries[0], role="intern")
    report = verify_entries(
        data, PACKET_ID, OWNERS, [*entries, entries[0], stranger, "junk"], now=NOW
    )
    assert report.roles[0].status == "invalid" and "2 signature entries" in report.roles[0].reason
    assert report.problems == (
        "signatures[4]: role 'intern' is not an owner role",
        "signatures[5]: role None is not an owner role",
    )


def test_a_reject_decision_verifies_but_does_not_approve(keys) -> None:
    entries = sign_all(keys)
    entries[2] = sign_entry(
        BODY,
        PACKET_ID,
        "release",
        OWNERS["release"],
        "reject",
        keys["rsa-3072"].private_key,
        SIGNED_AT,
    )
    data, parsed = packet_with(BODY, entries)
    report = verify_entries(data, PACKET_ID, OWNERS, parsed, now=NOW)
    assert report.ok and not report.approved


def test_statements_signed_by_ssh_keygen_verify_in_the_workbench(key) -> None:
    role = {v: k for k, v in KIND_OF_ROLE.items()}[key.kind]
    statement = approval_statement(
        PACKET_ID, body_sha256(BODY), role, OWNERS[role], "approve", SIGNED_AT
    )
    signature = ssh_keygen_sign(key.path, NAMESPACE, statement.encode())
    fingerprint = sshsig.dearmor(signature).fingerprint
    entry = {
        "role": role,
        "principal": OWNERS[role],
        "key_fingerprint": fingerprint,
        "time": "2025-06-01T11:00:00Z",
        "decision": "approve",
        "statement": statement,
        "signature": signature,
    }
    data, entries = packet_with(BODY, [entry])
    trusted = parse_allowed_signers(
        allowed_line({key.kind: key}, role) if False else f"{OWNERS[role]} {key.public_line}"
    )
    report = verify_entries(data, PACKET_ID, OWNERS, entries, trusted, now=NOW)
    assert report.roles[[*OWNERS].index(role)].status == "valid"


def test_same_inputs_give_byte_identical_entries(keys) -> None:
    assert sign_all(keys) == sign_all(keys)


_field_values = st.one_of(
    st.none(), st.integers(), st.text(max_size=40), st.sampled_from([*OWNERS])
)


@settings(max_examples=100, deadline=None)
@given(
    fuzz=st.lists(
        st.one_of(
            st.dictionaries(st.sampled_from(list(ENTRY_FIELDS)), _field_values), st.text(max_size=5)
        ),
        max_size=4,
    )
)
def test_malformed_entries_never_raise(signed, fuzz) -> None:
    data, entries = signed
    report = verify_entries(data, PACKET_ID, OWNERS, [*entries[:1], *fuzz], now=NOW)
    assert all(r.status in {"missing", "valid", "invalid"} for r in report.roles)
    assert not report.ok  # fuzz cannot forge the two missing signatures
