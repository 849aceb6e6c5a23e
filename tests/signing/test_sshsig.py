"""SSHSIG: interop with ssh-keygen in both directions, and a clear error for every failure."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from hypothesis import given, settings
from hypothesis import strategies as st

from packets.signing import sshsig
from packets.signing.sshkeys import LocalSigner, public_key_blob
from packets.signing.sshwire import encode_string, encode_uint32
from tests.signing.conftest import TestKey, run, ssh_keygen_sign, ssh_keygen_verify

MESSAGE = b"handoff-packet/1 approval\npacket: PKT-1\n"


def _ssh_keygen_fingerprint(key: TestKey) -> str:
    out = run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(key.path.with_suffix(".pub"))])
    return out.stdout.decode().split()[1]


@pytest.mark.parametrize("hash_algorithm", ["sha512", "sha256"])
def test_workbench_signature_verifies_with_ssh_keygen(
    key: TestKey, hash_algorithm: str, tmp_path
) -> None:
    armored = sshsig.sign(MESSAGE, key.private_key, "handoff-packet", hash_algorithm)
    result = ssh_keygen_verify(
        tmp_path,
        f"alice@example.com {key.public_line}",
        "alice@example.com",
        "handoff-packet",
        MESSAGE,
        armored,
    )
    assert result.returncode == 0, result.stderr
    assert b'Good "handoff-packet" signature for alice@example.com' in result.stdout
    novalidate = run(
        [
            "ssh-keygen",
            "-Y",
            "check-novalidate",
            "-n",
            "handoff-packet",
            "-s",
            str(tmp_path / "message.sig"),
        ],
        MESSAGE,
    )
    assert novalidate.returncode == 0, novalidate.stderr


@pytest.mark.parametrize("hash_algorithm", ["sha512", "sha256"])
def test_ssh_keygen_signature_verifies_in_workbench(key: TestKey, hash_algorithm: str) -> None:
    armored = ssh_keygen_sign(
        key.path, "handoff-packet", MESSAGE, "-O", f"hashalg={hash_algorithm}"
    )
    verified = sshsig.verify(MESSAGE, armored, "handoff-packet")
    assert verified.fingerprint == _ssh_keygen_fingerprint(key)
    assert verified.hash_algorithm == hash_algorithm
    assert verified.public_key_blob == public_key_blob(key.private_key)
    expected_algorithm = "rsa-sha2-512" if key.kind.startswith("rsa") else verified.key_type
    assert verified.signature_algorithm == expected_algorithm


@pytest.mark.parametrize("kind", ["ed25519", "rsa-3072"])
def test_deterministic_algorithms_give_ssh_keygens_exact_bytes(keys, kind: str) -> None:
    key = keys[kind]
    ours = sshsig.sign(MESSAGE, key.private_key, "handoff-packet")
    assert ours == ssh_keygen_sign(key.path, "handoff-packet", MESSAGE)


def test_ecdsa_signatures_are_reproducible(keys) -> None:
    key = keys["ecdsa-p256"].private_key
    assert sshsig.sign(MESSAGE, key, "ns") == sshsig.sign(MESSAGE, key, "ns")


def test_armor_wraps_base64_at_70_columns(keys) -> None:
    lines = sshsig.sign(MESSAGE, keys["rsa-3072"].private_key, "ns").splitlines()
    assert lines[0] == sshsig.BEGIN and lines[-1] == sshsig.END
    assert {len(line) for line in lines[1:-2]} == {70}
    assert 0 < len(lines[-2]) <= 70


def test_altered_message_is_a_bad_signature(key: TestKey) -> None:
    armored = sshsig.sign(MESSAGE, key.private_key, "handoff-packet")
    with pytest.raises(sshsig.BadSignature, match="does not verify"):
        sshsig.verify(MESSAGE + b"x", armored, "handoff-packet")


def test_altered_signature_bytes_are_a_bad_signature(keys) -> None:
    parsed = sshsig.dearmor(sshsig.sign(MESSAGE, keys["ed25519"].private_key, "ns"))
    flipped = bytearray(parsed.signature_blob)
    flipped[-1] ^= 1
    tampered = sshsig.armor(
        sshsig.SshSignature(parsed.public_key_blob, "ns", "sha512", bytes(flipped))
    )
    with pytest.raises(sshsig.BadSignature):
        sshsig.verify(MESSAGE, tampered, "ns")


def test_wrong_namespace_names_both(keys) -> None:
    armored = sshsig.sign(MESSAGE, keys["ed25519"].private_key, "git")
    with pytest.raises(sshsig.NamespaceMismatch, match="'git', expected 'handoff-packet'"):
        sshsig.verify(MESSAGE, armored, "handoff-packet")


def _blob(
    version: int = 1, key_blob: bytes = b"", hash_algorithm: str = "sha512", tail: bytes = b""
) -> str:
    raw = (
        b"SSHSIG"
        + encode_uint32(version)
        + encode_string(key_blob)
        + encode_string("ns")
        + encode_string(b"")
        + encode_string(hash_algorithm)
        + encode_string(b"sig")
        + tail
    )
    text = base64.b64encode(raw).decode()
    return f"{sshsig.BEGIN}\n{text}\n{sshsig.END}\n"


def test_other_versions_are_refused() -> None:
    with pytest.raises(sshsig.UnsupportedVersion, match="version 2"):
        sshsig.verify(MESSAGE, _blob(version=2), "ns")


def test_unsupported_key_type_is_named() -> None:
    security_key = encode_string("sk-ssh-ed25519@openssh.com") + encode_string(b"\0" * 32)
    with pytest.raises(sshsig.UnsupportedKeyType, match=r"sk-ssh-ed25519@openssh\.com"):
        sshsig.verify(MESSAGE, _blob(key_blob=security_key), "ns")


def test_unsupported_hash_algorithm_is_named() -> None:
    with pytest.raises(sshsig.UnsupportedAlgorithm, match="'sha1'"):
        sshsig.verify(MESSAGE, _blob(hash_algorithm="sha1"), "ns")


def test_trailing_bytes_after_the_blob_are_refused() -> None:
    with pytest.raises(sshsig.ArmorError, match="trailing"):
        sshsig.verify(MESSAGE, _blob(tail=b"\0"), "ns")


@pytest.mark.parametrize(
    ("armored", "reason"),
    [
        ("", "does not start with"),
        ("hello", "does not start with"),
        (f"{sshsig.BEGIN}\nAAAA\n", "does not end with"),
        (f"{sshsig.BEGIN}\n!!!!\n{sshsig.END}", "not valid base64"),
        (
            f"{sshsig.BEGIN}\n{base64.b64encode(b'NOTSIG' + bytes(8)).decode()}\n{sshsig.END}",
            "bad magic",
        ),
        (f"{sshsig.BEGIN}\n{base64.b64encode(b'SSH').decode()}\n{sshsig.END}", "truncated"),
    ],
)
def test_bad_armor_has_a_clear_reason(armored: str, reason: str) -> None:
    with pytest.raises(sshsig.ArmorError, match=reason):
        sshsig.verify(MESSAGE, armored, "ns")


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=0, max_value=10**6))
def test_any_truncation_fails_with_a_signature_error(keys, cut: int) -> None:
    armored = sshsig.sign(MESSAGE, keys["ecdsa-p256"].private_key, "ns")
    truncated = armored[: cut % (len(armored) - 1)]  # keeping all but the final newline is valid
    with pytest.raises(sshsig.SignatureError):
        sshsig.verify(MESSAGE, truncated, "ns")


@settings(max_examples=150, deadline=None)
@given(garbage=st.binary(max_size=300))
def test_garbage_blobs_fail_with_a_signature_error(garbage: bytes) -> None:
    armored = f"{sshsig.BEGIN}\n{base64.b64encode(b'SSHSIG' + garbage).decode()}\n{sshsig.END}\n"
    with pytest.raises(sshsig.SignatureError):
        sshsig.verify(MESSAGE, armored, "ns")


def _rsa_signature(
    key: rsa.RSAPrivateKey, algorithm: str, digest: hashes.HashAlgorithm, message: bytes
) -> str:
    """An SSHSIG whose RSA signature uses the given SSH algorithm name and hash."""
    signed = sshsig.signed_data("ns", "sha512", message)
    signature = encode_string(algorithm) + encode_string(
        key.sign(signed, padding.PKCS1v15(), digest)
    )
    return sshsig.armor(sshsig.SshSignature(public_key_blob(key), "ns", "sha512", signature))


def test_rsa_sha1_signatures_are_refused(keys) -> None:
    armored = _rsa_signature(keys["rsa-3072"].private_key, "ssh-rsa", hashes.SHA1(), MESSAGE)
    with pytest.raises(sshsig.UnsupportedAlgorithm, match="SHA-1"):
        sshsig.verify(MESSAGE, armored, "ns")


def test_rsa_sha2_256_signatures_verify(keys) -> None:
    armored = _rsa_signature(keys["rsa-3072"].private_key, "rsa-sha2-256", hashes.SHA256(), MESSAGE)
    assert sshsig.verify(MESSAGE, armored, "ns").signature_algorithm == "rsa-sha2-256"


def test_rsa_signature_with_its_leading_zero_dropped_still_verifies(keys) -> None:
    # RFC 8332 section 3: some signers send S without leading zero bytes. PKCS#1 v1.5 is
    # deterministic, so searching messages in order finds the same one on every run.
    key = keys["rsa-3072"].private_key
    for counter in range(5000):  # a zero first byte comes once per ~256 messages
        message = b"m%d" % counter
        parsed = sshsig.dearmor(sshsig.sign(message, key, "ns"))
        raw = parsed.signature_blob[4 + len("rsa-sha2-512") + 4 :]
        if raw[0] == 0:
            break
    else:
        pytest.fail("no RSA signature with a leading zero byte in 5000 messages")
    short = encode_string("rsa-sha2-512") + encode_string(raw.lstrip(b"\0"))
    armored = sshsig.armor(sshsig.SshSignature(parsed.public_key_blob, "ns", "sha512", short))
    assert sshsig.verify(message, armored, "ns").signature_algorithm == "rsa-sha2-512"


def test_short_rsa_keys_are_refused_for_signing_and_verifying() -> None:
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    with pytest.raises(sshsig.UnsupportedKeyType, match="1024 bits"):
        sshsig.sign(MESSAGE, weak, "ns")
    signed = sshsig.signed_data("ns", "sha512", MESSAGE)
    raw = weak.sign(signed, padding.PKCS1v15(), hashes.SHA512())
    blob = encode_string("rsa-sha2-512") + encode_string(raw)
    armored = sshsig.armor(sshsig.SshSignature(public_key_blob(weak), "ns", "sha512", blob))
    with pytest.raises(sshsig.UnsupportedKeyType, match="1024 bits"):
        sshsig.verify(MESSAGE, armored, "ns")


def test_signature_algorithm_must_fit_the_key(keys) -> None:
    ed_signature = LocalSigner(keys["ed25519"].private_key).sign_ssh_data(b"x")
    ecdsa_blob = public_key_blob(keys["ecdsa-p256"].private_key)
    armored = sshsig.armor(sshsig.SshSignature(ecdsa_blob, "ns", "sha512", ed_signature))
    with pytest.raises(sshsig.BadSignature, match="does not fit"):
        sshsig.verify(MESSAGE, armored, "ns")
