"""Key files: every way loading can fail gives one line naming the file and the reason."""

from __future__ import annotations

import base64
import os

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519

from packets.signing.keyfiles import load_private_key, read_public_key_blob
from packets.signing.ssherrors import KeyLoadError
from packets.signing.sshkeys import public_key_blob
from packets.signing.sshwire import encode_string, encode_uint32
from tests.signing.conftest import ssh_keygen_generate


@pytest.fixture(scope="module")
def protected(tmp_path_factory):
    """An Ed25519 key protected by the passphrase 'correct horse'."""
    folder = tmp_path_factory.mktemp("protected")
    return ssh_keygen_generate(folder / "id_ed25519", ["-t", "ed25519"], "correct horse")


def test_each_kind_loads_and_matches_its_pub_file(key) -> None:
    assert public_key_blob(load_private_key(key.path)) == read_public_key_blob(
        key.path.with_suffix(".pub")
    )


def test_passphrase_is_asked_with_the_file_in_the_prompt(protected) -> None:
    prompts = []
    loaded = load_private_key(protected, lambda prompt: prompts.append(prompt) or "correct horse")
    assert isinstance(loaded, ed25519.Ed25519PrivateKey)
    assert prompts == [f"Enter passphrase for {protected}: "]


def test_unencrypted_keys_never_ask(keys) -> None:
    load_private_key(keys["ed25519"].path, lambda prompt: pytest.fail("asked for a passphrase"))


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("Tr0ub4dor&3", "wrong passphrase"),
        ("", "no passphrase was given"),
        (None, "no passphrase can be asked"),
    ],
)
def test_passphrase_failures_are_named_and_never_echoed(protected, answer, reason) -> None:
    callback = None if answer is None else (lambda prompt: answer)
    with pytest.raises(KeyLoadError, match=reason) as caught:
        load_private_key(protected, callback)
    assert str(caught.value).startswith(str(protected))
    assert "horse" not in str(caught.value)
    assert not answer or answer not in str(caught.value)


def test_a_public_key_given_instead_of_the_private_one(keys) -> None:
    pub = keys["ed25519"].path.with_suffix(".pub")
    with pytest.raises(KeyLoadError, match=r"public key; give the private key file"):
        load_private_key(pub)


def test_unreadable_files(tmp_path) -> None:
    with pytest.raises(KeyLoadError, match="cannot read key file: No such file"):
        load_private_key(tmp_path / "absent")
    with pytest.raises(KeyLoadError, match="cannot read key file"):
        load_private_key(tmp_path)  # a directory
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(KeyLoadError, match="not an OpenSSH private key file"):
        load_private_key(tmp_path / "notes.txt")


def _openssh_file(key_blob: bytes, cipher: str = "none") -> str:
    """An openssh-key-v1 file around a public key blob (the private part is filler)."""
    raw = (
        b"openssh-key-v1\0"
        + encode_string(cipher)
        + encode_string("none")
        + encode_string(b"")
        + encode_uint32(1)
        + encode_string(key_blob)
        + encode_string(b"\0" * 16)
    )
    body = base64.b64encode(raw).decode()
    return f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n"


def test_unsupported_key_types_are_named(tmp_path) -> None:
    path = tmp_path / "id_dsa"
    path.write_text(_openssh_file(encode_string("ssh-dss") + encode_string(b"\1")))
    with pytest.raises(KeyLoadError, match="unsupported key type ssh-dss"):
        load_private_key(path)
    with pytest.raises(KeyLoadError, match="unsupported key type ssh-dss"):
        read_public_key_blob(path)


def test_corrupt_and_truncated_openssh_files(keys, tmp_path) -> None:
    text = keys["ed25519"].path.read_text()
    path = tmp_path / "cut"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(KeyLoadError, match="truncated"):
        load_private_key(path)
    path.write_text(_openssh_file(public_key_blob(keys["ed25519"].private_key)))
    with pytest.raises(KeyLoadError, match="corrupt private key"):
        load_private_key(path)


def test_pem_keys_load_too(tmp_path) -> None:
    path = ssh_keygen_generate(tmp_path / "id_ecdsa", ["-t", "ecdsa", "-b", "256", "-m", "PEM"])
    assert isinstance(load_private_key(path), ec.EllipticCurvePrivateKey)
    protected = ssh_keygen_generate(tmp_path / "id_pem_pw", ["-t", "ecdsa", "-m", "PEM"], "pw-pem")
    with pytest.raises(KeyLoadError, match="wrong passphrase"):
        load_private_key(protected, lambda prompt: "nope")
    assert isinstance(
        load_private_key(protected, lambda prompt: b"pw-pem"), ec.EllipticCurvePrivateKey
    )


def test_public_blob_comes_from_the_private_file_header_without_a_passphrase(protected) -> None:
    expected = read_public_key_blob(protected.with_suffix(".pub"))
    assert read_public_key_blob(protected) == expected


def test_public_blob_falls_back_to_the_pub_file(keys, tmp_path) -> None:
    key = keys["ecdsa-p256"]
    pem_like = tmp_path / "id"
    pem_like.write_text("not a key\n")
    (tmp_path / "id.pub").write_text(key.path.with_suffix(".pub").read_text())
    assert read_public_key_blob(pem_like) == public_key_blob(key.private_key)


def test_loading_writes_nothing(protected) -> None:
    before = sorted(os.listdir(protected.parent))
    load_private_key(protected, lambda prompt: "correct horse")
    assert sorted(os.listdir(protected.parent)) == before


def test_pem_keys_of_other_types_are_refused(tmp_path) -> None:
    path = tmp_path / "ed448.pem"
    path.write_bytes(
        ed448.Ed448PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(KeyLoadError, match="unsupported key type Ed448PrivateKey"):
        load_private_key(path)
