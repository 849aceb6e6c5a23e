"""allowed_signers: parsed like ssh-keygen, decided like ssh-keygen (checked side by side)."""

from __future__ import annotations

import base64
import os
import time
from datetime import UTC, datetime

import pytest

from packets.signing import sshsig
from packets.signing.allowed_signers import (
    AllowedSignersError,
    check_signer,
    load_allowed_signers,
    match_pattern_list,
    parse_allowed_signers,
)
from packets.signing.sshkeys import public_key_blob
from packets.signing.sshwire import encode_string
from tests.signing.conftest import ssh_keygen_verify

NS = "handoff-packet"
MESSAGE = b"approval statement\n"
PRINCIPAL = "alice@example.com"


@pytest.fixture(scope="module")
def signed(keys):
    """(public line, key blob, armored signature over MESSAGE) with the Ed25519 key."""
    key = keys["ed25519"]
    return (
        key.public_line,
        public_key_blob(key.private_key),
        sshsig.sign(MESSAGE, key.private_key, NS),
    )


def _at(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y%m%d%H%M%SZ").replace(tzinfo=UTC)


# (principals, options, principal asked, namespace, verify time): decided by both implementations.
CASES = [
    ("alice@example.com", "", PRINCIPAL, NS, "20250601000000Z"),
    ("*@example.com", "", PRINCIPAL, NS, "20250601000000Z"),
    ("a?ice@example.com", "", PRINCIPAL, NS, "20250601000000Z"),
    ("bob@example.com,alice@example.com", "", PRINCIPAL, NS, "20250601000000Z"),
    ('"alice@example.com"', "", PRINCIPAL, NS, "20250601000000Z"),
    ("!alice@example.com,*@example.com", "", PRINCIPAL, NS, "20250601000000Z"),
    ("*@example.com,!alice@example.com", "", PRINCIPAL, NS, "20250601000000Z"),
    ("Alice@example.com", "", PRINCIPAL, NS, "20250601000000Z"),
    ("alice@example.co", "", PRINCIPAL, NS, "20250601000000Z"),
    ("*", "", PRINCIPAL, NS, "20250601000000Z"),
    ("alice@example.com", 'namespaces="handoff-packet"', PRINCIPAL, NS, "20250601000000Z"),
    ("alice@example.com", 'namespaces="git"', PRINCIPAL, NS, "20250601000000Z"),
    ("alice@example.com", 'namespaces="git,hand*"', PRINCIPAL, NS, "20250601000000Z"),
    ("alice@example.com", 'namespaces="!handoff-packet,*"', PRINCIPAL, NS, "20250601000000Z"),
    ("alice@example.com", 'NAMESPACES="handoff-packet"', PRINCIPAL, NS, "20250601000000Z"),
    ("alice@example.com", 'valid-after="20250101Z"', PRINCIPAL, NS, "20241231235959Z"),
    ("alice@example.com", 'valid-after="20250101Z"', PRINCIPAL, NS, "20250101000000Z"),
    ("alice@example.com", 'valid-before="20250101Z"', PRINCIPAL, NS, "20250101000000Z"),
    ("alice@example.com", 'valid-before="20250101Z"', PRINCIPAL, NS, "20250101000001Z"),
    ("alice@example.com", 'valid-after="202501011230Z"', PRINCIPAL, NS, "20250101122959Z"),
    ("alice@example.com", 'valid-before="20250101123045Z"', PRINCIPAL, NS, "20250101123045Z"),
    (
        "alice@example.com",
        'valid-after="20250101Z",valid-before="20250201Z",namespaces="handoff-packet"',
        PRINCIPAL,
        NS,
        "20250115000000Z",
    ),
]


@pytest.mark.parametrize(("principals", "options", "principal", "namespace", "stamp"), CASES)
def test_decisions_match_ssh_keygen(
    signed, tmp_path, principals, options, principal, namespace, stamp
) -> None:
    public_line, blob, armored = signed
    line = " ".join(part for part in (principals, options, public_line) if part)
    ours = check_signer(parse_allowed_signers(line), principal, blob, namespace, _at(stamp))
    theirs = ssh_keygen_verify(
        tmp_path, line, principal, namespace, MESSAGE, armored, f"-Overify-time={stamp}"
    )
    assert ours.allowed == (theirs.returncode == 0), (ours.reason, theirs.stderr)


@pytest.fixture
def tokyo_time(monkeypatch):
    """Local time set to Asia/Tokyo (UTC+9, no DST) for this test, restored afterwards."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield {**os.environ}
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("stamp", "allowed"), [("20241231145959Z", False), ("20241231150000Z", True)]
)
def test_times_without_z_are_local_time_like_ssh_keygen(
    signed, tmp_path, tokyo_time, stamp, allowed
) -> None:
    public_line, blob, armored = signed
    line = f'{PRINCIPAL} valid-after="20250101" {public_line}'
    ours = check_signer(parse_allowed_signers(line), PRINCIPAL, blob, NS, _at(stamp))
    theirs = ssh_keygen_verify(
        tmp_path, line, PRINCIPAL, NS, MESSAGE, armored, f"-Overify-time={stamp}", env=tokyo_time
    )
    assert ours.allowed is allowed
    assert (theirs.returncode == 0) is allowed, theirs.stderr


def test_reasons_name_the_line_and_the_limit(signed) -> None:
    public_line, blob, _ = signed
    text = "\n".join(
        [
            "# team keys",
            f'{PRINCIPAL} namespaces="git" {public_line}',
            f'{PRINCIPAL} valid-before="20250101Z" {public_line} alice-old',
        ]
    )
    check = check_signer(
        parse_allowed_signers(text, "team"), PRINCIPAL, blob, NS, _at("20250601000000Z")
    )
    assert not check.allowed
    assert check.reason == (
        "team:2: key not allowed for namespace 'handoff-packet'; "
        "team:3: key expired at 2025-01-01T00:00:00Z"
    )
    other = check_signer(
        parse_allowed_signers(text), "bob@example.com", blob, NS, _at("20240101000000Z")
    )
    assert other.reason.startswith("key SHA256:") and other.reason.endswith(
        "not allowed for bob@example.com"
    )


def test_comments_blank_lines_trailing_comments_and_other_key_types(signed) -> None:
    public_line, blob, _ = signed
    security_key = (
        encode_string("sk-ssh-ed25519@openssh.com")
        + encode_string(b"\1" * 32)
        + encode_string("ssh:")
    )
    text = "\n".join(
        [
            "",
            "   # indented comment",
            f"{PRINCIPAL} {public_line} alice laptop key",
            f"bob@example.com sk-ssh-ed25519@openssh.com {base64.b64encode(security_key).decode()}",
        ]
    )
    signers = parse_allowed_signers(text, "f")
    assert [(s.principals, s.source) for s in signers] == [
        (PRINCIPAL, "f:3"),
        ("bob@example.com", "f:4"),
    ]
    assert signers[0].key_blob == blob
    assert not check_signer(signers, "bob@example.com", blob, NS, _at("20250101000000Z")).allowed


@pytest.mark.parametrize(
    ("middle", "message"),
    [
        ("{p}", "expected 'principals [options] keytype base64-key'"),
        ("{p} cert-authority {k}", "cert-authority is not supported"),
        ("{p} valid-after=20250101 {k}", 'needs a quoted value: valid-after="..."'),
        ('{p} valid-after="2025" {k}', "bad time '2025'"),
        ('{p} valid-after="2025010112Z" {k}', "bad time '2025010112Z'"),
        ('{p} valid-before="20251340" {k}', "no such date"),
        ('{p} colour="red" {k}', "unknown option 'colour'"),
        ('{p} namespaces="a",namespaces="b" {k}', "option namespaces given twice"),
        ('{p} namespaces="a"valid-after="20250101" {k}', "expected ',' after option namespaces"),
        ("{p} ssh-rsa {b}", "key type ssh-rsa does not match the key (ssh-ed25519)"),
        ("{p} ssh-ed25519 !!!notbase64", "not valid base64"),
        ("{p} ssh-ed25519", "expected a key type and a base64 key"),
        ('"{p} {k}', "unterminated double quote"),
    ],
)
def test_malformed_lines_fail_with_file_and_line(signed, tmp_path, middle, message) -> None:
    public_line, _, armored = signed
    bad = middle.format(p=PRINCIPAL, k=public_line, b=public_line.split()[1])
    path = tmp_path / "allowed_signers"
    path.write_text(f"# keys\n\n{bad}\n{PRINCIPAL} {public_line}\n")
    with pytest.raises(AllowedSignersError) as caught:
        load_allowed_signers(path)
    assert str(caught.value).startswith(f"{path}:3: ")
    assert message in str(caught.value)
    # ssh-keygen complains about the same line (then skips it; we refuse the whole file).
    # cert-authority is valid for ssh-keygen: only this workbench refuses it.
    if "cert-authority" not in bad:
        lines = path.read_text().rstrip("\n")
        theirs = ssh_keygen_verify(tmp_path, lines, PRINCIPAL, NS, MESSAGE, armored)
        assert "allowed_signers:3: " in theirs.stderr.decode()


def test_unreadable_file_is_named(tmp_path) -> None:
    with pytest.raises(AllowedSignersError, match=r"absent: cannot read allowed signers"):
        load_allowed_signers(tmp_path / "absent")


@pytest.mark.parametrize(
    ("value", "patterns", "expected"),
    [
        ("a@x", "a@x", True),
        ("a@x", "*", True),
        ("a@x", "?@x", True),
        ("ab@x", "?@x", False),
        ("a@x", "b@x,a@*", True),
        ("a@x", "!a@x,*", False),
        ("a.b", "a?b", True),
        ("a+b", "a+b", True),
        ("aab", "a+b", False),
        ("a@x", "", False),
    ],
)
def test_pattern_lists(value, patterns, expected) -> None:
    assert match_pattern_list(value, patterns) is expected
