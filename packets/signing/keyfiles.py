"""Reading SSH key files: private keys to sign with, public keys to find an agent's key.

Private keys never leave the returned object: nothing here writes, logs or puts key bytes or
passphrases into error messages.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm as CryptoUnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from packets.files import PRIVATE_KEY, FileRefused, read_regular
from packets.signing.ssherrors import KeyLoadError, SignatureError
from packets.signing.sshkeys import (
    PRIVATE_KEY_TYPES,
    SUPPORTED_KEY_TYPES,
    PrivateKey,
    key_type_of,
    parse_public_key_blob,
    parse_public_key_line,
    public_key_blob,
)
from packets.signing.sshwire import WireReader

PassphraseCallback = Callable[[str], str | bytes]
"""Called with a prompt (`Enter passphrase for PATH: `); returns the passphrase."""

OPENSSH_BEGIN = "-----BEGIN OPENSSH PRIVATE KEY-----"
OPENSSH_END = "-----END OPENSSH PRIVATE KEY-----"
OPENSSH_MAGIC = b"openssh-key-v1\0"
PEM_BEGINS = (
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN ENCRYPTED PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----BEGIN EC PRIVATE KEY-----",
)
PUBLIC_KEY_HINT = "it holds a public key; give the private key file (the one without .pub)"


def _read(path: Path) -> bytes:
    """The key file's bytes: a regular file within the `files.PRIVATE_KEY` cap."""
    try:
        return read_regular(path, PRIVATE_KEY)
    except FileRefused as error:
        raise KeyLoadError(f"{path}: cannot read key file: {error.reason}") from None


def _openssh_header(path: Path, text: str) -> tuple[str, bytes]:
    """(cipher name, public key blob) from the unencrypted header of an OpenSSH key file;
    refuses unsupported key types before any passphrase is asked."""
    end = text.find(OPENSSH_END)
    if end < 0:
        raise KeyLoadError(f"{path}: OpenSSH private key is truncated (no END line)")
    try:
        raw = base64.b64decode("".join(text[len(OPENSSH_BEGIN) : end].split()), validate=True)
        reader = WireReader(raw, "key file")
        if reader.raw(len(OPENSSH_MAGIC), "magic") != OPENSSH_MAGIC:
            raise KeyLoadError(f"{path}: not an openssh-key-v1 private key")
        cipher = reader.text("cipher")
        reader.text("kdf")
        reader.string("kdf options")
        if reader.uint32("key count") != 1:
            raise KeyLoadError(f"{path}: holds several keys; give a file with one key")
        blob = reader.string("public key")
        key_type = key_type_of(blob)
    except KeyLoadError:
        raise
    except (binascii.Error, ValueError):  # bad base64, short wire data, malformed key blob
        raise KeyLoadError(f"{path}: corrupt OpenSSH private key") from None
    _check_supported(path, key_type)
    return cipher, blob


def _check_supported(path: Path, key_type: str) -> None:
    if key_type not in SUPPORTED_KEY_TYPES:
        raise KeyLoadError(
            f"{path}: unsupported key type {key_type} (use ed25519, ecdsa or rsa >= 2048 bits)"
        )


def _ask(path: Path, callback: PassphraseCallback | None) -> bytes:
    if callback is None:
        raise KeyLoadError(f"{path}: key is passphrase-protected and no passphrase can be asked")
    answer = callback(f"Enter passphrase for {path}: ")
    passphrase = answer.encode() if isinstance(answer, str) else answer
    if not passphrase:
        raise KeyLoadError(f"{path}: key is passphrase-protected and no passphrase was given")
    return passphrase


def load_private_key(
    path: str | Path, passphrase_callback: PassphraseCallback | None = None
) -> PrivateKey:
    """The private key in an OpenSSH (or PEM) key file; asks the callback if it is encrypted.

    Raises `KeyLoadError` naming the file for: unreadable file, public key given, corrupt file,
    wrong passphrase, unsupported key type (DSA, security keys, RSA below 2048 bits).
    """
    path = Path(path).expanduser()
    data = _read(path)
    text = data.decode("ascii", errors="replace").lstrip()
    if text.startswith(OPENSSH_BEGIN):
        cipher, _blob = _openssh_header(path, text)
        passphrase = None if cipher == "none" else _ask(path, passphrase_callback)
        loader = serialization.load_ssh_private_key
    elif text.startswith(PEM_BEGINS):
        encrypted = "ENCRYPTED" in text.split("\n", 2)[0] or "Proc-Type: 4,ENCRYPTED" in text
        passphrase = _ask(path, passphrase_callback) if encrypted else None
        loader = serialization.load_pem_private_key
    elif _looks_public(text):
        raise KeyLoadError(f"{path}: {PUBLIC_KEY_HINT}")
    else:
        raise KeyLoadError(f"{path}: not an OpenSSH private key file")
    try:
        key = loader(data, passphrase)
    except CryptoUnsupportedAlgorithm:
        raise KeyLoadError(f"{path}: unsupported key type or cipher") from None
    except (ValueError, TypeError):
        reason = "wrong passphrase" if passphrase else "corrupt private key"
        raise KeyLoadError(f"{path}: {reason}") from None
    if not isinstance(key, PRIVATE_KEY_TYPES):
        raise KeyLoadError(f"{path}: unsupported key type {type(key).__name__}")
    try:
        parse_public_key_blob(public_key_blob(key))  # refuses short RSA keys
    except SignatureError as error:
        raise KeyLoadError(f"{path}: {error}") from None
    return key


def _looks_public(text: str) -> bool:
    """True for a .pub line (`ssh-ed25519 AAAA...`) or an RFC 4716 public key block."""
    return text.startswith(("ssh-", "sk-", "ecdsa-", "---- BEGIN SSH2 PUBLIC KEY"))


def read_public_key_blob(path: str | Path) -> bytes:
    """The public key blob for a key path: a .pub file, or the header of an OpenSSH private key
    (readable without its passphrase), or else PATH.pub. Used to pick a key held by ssh-agent."""
    path = Path(path).expanduser()
    text = _read(path).decode("ascii", errors="replace").lstrip()
    if text.startswith(OPENSSH_BEGIN):
        return _openssh_header(path, text)[1]
    if not _looks_public(text):
        public = path.with_name(path.name + ".pub")
        if path.suffix != ".pub" and public.exists():
            return read_public_key_blob(public)
        raise KeyLoadError(f"{path}: holds no OpenSSH public key")
    try:
        return parse_public_key_line(text.splitlines()[0])
    except SignatureError as error:
        raise KeyLoadError(f"{path}: {error}") from None
