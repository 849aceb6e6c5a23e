"""SSH public key blobs, fingerprints and the raw sign/verify step of each supported key type.

Supported: Ed25519, ECDSA on nistp256/384/521 (hashed with SHA-256/384/512 as RFC 5656 fixes),
RSA of at least 2048 bits signing with rsa-sha2-512 (RFC 8332) and verifying rsa-sha2-256 or
rsa-sha2-512. SHA-1 `ssh-rsa` signatures are refused. Blobs are SSH wire bytes (RFC 4253 6.6).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from packets.signing.ssherrors import (
    ArmorError,
    BadSignature,
    MalformedKey,
    UnsupportedAlgorithm,
    UnsupportedKeyType,
)
from packets.signing.sshwire import WireError, WireReader, encode_mpint, encode_string

PrivateKey = ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
PRIVATE_KEY_TYPES = (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)
PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey

# NIST SP 800-131A Rev. 2 disallows RSA signature generation below 2048 bits.
MIN_RSA_BITS = 2048
ED25519 = "ssh-ed25519"
RSA = "ssh-rsa"
# Curve name in the key type -> the hash RFC 5656 section 6.2.1 fixes for that curve.
ECDSA_HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "ecdsa-sha2-nistp256": hashes.SHA256,
    "ecdsa-sha2-nistp384": hashes.SHA384,
    "ecdsa-sha2-nistp521": hashes.SHA512,
}
RSA_SIGNATURE_HASHES: dict[str, type[hashes.HashAlgorithm]] = {
    "rsa-sha2-512": hashes.SHA512,
    "rsa-sha2-256": hashes.SHA256,
}
SUPPORTED_KEY_TYPES = (ED25519, *ECDSA_HASHES, RSA)


def key_type_of(blob: bytes) -> str:
    """The key type name that starts a public key blob, e.g. `ssh-ed25519`."""
    try:
        return WireReader(blob, "public key").text("key type")
    except WireError as error:
        raise MalformedKey(str(error)) from None


def parse_public_key_blob(blob: bytes) -> PublicKey:
    """The `cryptography` public key of an SSH public key blob of a supported type."""
    key_type = key_type_of(blob)
    if key_type not in SUPPORTED_KEY_TYPES:
        raise UnsupportedKeyType(
            f"unsupported key type {key_type} (use ed25519, ecdsa-sha2-nistp256/384/521 or rsa)"
        )
    try:
        key = serialization.load_ssh_public_key(openssh_public_line(blob).encode())
    except (ValueError, TypeError) as error:
        raise MalformedKey(f"malformed {key_type} public key: {error}") from None
    _check_rsa_size(key)
    return key  # type: ignore[return-value]


def public_key_blob(key: PublicKey | PrivateKey) -> bytes:
    """The SSH wire blob of a key (a private key gives its public half)."""
    public = key.public_key() if isinstance(key, PRIVATE_KEY_TYPES) else key
    line = public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return base64.b64decode(line.split()[1])


def fingerprint(blob: bytes) -> str:
    """`SHA256:` + unpadded base64 of SHA-256(blob): exactly what `ssh-keygen -l` prints."""
    digest = hashlib.sha256(blob).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def openssh_public_line(blob: bytes) -> str:
    """`keytype base64` as in a .pub or allowed_signers file (no comment)."""
    return f"{key_type_of(blob)} {base64.b64encode(blob).decode()}"


def parse_public_key_line(text: str, require_supported: bool = True) -> bytes:
    """The blob of a `keytype base64 [comment]` line; the type word must match the blob.

    With `require_supported=False`, keys of other types (e.g. security keys) are returned
    unparsed: an allowed_signers file may list them for other tools.
    """
    words = text.split()
    if len(words) < 2:
        raise MalformedKey("expected 'keytype base64-key [comment]'")
    try:
        blob = base64.b64decode(words[1], validate=True)
    except ValueError:
        raise MalformedKey(f"key for {words[0]} is not valid base64") from None
    if key_type_of(blob) != words[0]:
        raise MalformedKey(f"key type {words[0]} does not match the key ({key_type_of(blob)})")
    if require_supported or words[0] in SUPPORTED_KEY_TYPES:
        parse_public_key_blob(blob)
    return blob


def _check_rsa_size(key: PublicKey | PrivateKey) -> None:
    if isinstance(key, rsa.RSAPublicKey | rsa.RSAPrivateKey) and key.key_size < MIN_RSA_BITS:
        raise UnsupportedKeyType(
            f"RSA key of {key.key_size} bits is too short (minimum {MIN_RSA_BITS})"
        )


class SshSigner(Protocol):
    """Anything that makes SSH signatures: a local private key or a key held by ssh-agent."""

    @property
    def public_key_blob(self) -> bytes:
        """SSH wire blob of the public key."""
        ...

    def sign_ssh_data(self, data: bytes) -> bytes:
        """SSH signature blob, `string(algorithm) string(signature)`, over `data`."""
        ...


@dataclass(frozen=True)
class LocalSigner:
    """An `SshSigner` over a private key in this process; never prints or stores the key."""

    private_key: PrivateKey = field(repr=False)

    @property
    def public_key_blob(self) -> bytes:
        """SSH wire blob of the public half."""
        return public_key_blob(self.private_key)

    def sign_ssh_data(self, data: bytes) -> bytes:
        """Ed25519 as is, ECDSA with its curve's hash (RFC 6979 nonces), RSA as rsa-sha2-512."""
        key = self.private_key
        if isinstance(key, ed25519.Ed25519PrivateKey):
            return encode_string(ED25519) + encode_string(key.sign(data))
        if isinstance(key, ec.EllipticCurvePrivateKey):
            key_type = key_type_of(self.public_key_blob)
            # RFC 6979 deterministic nonces: same key and data give the same bytes, no RNG risk.
            algorithm = ec.ECDSA(ECDSA_HASHES[key_type](), deterministic_signing=True)
            r, s = decode_dss_signature(key.sign(data, algorithm))
            return encode_string(key_type) + encode_string(encode_mpint(r) + encode_mpint(s))
        if isinstance(key, rsa.RSAPrivateKey):
            _check_rsa_size(key)
            signature = key.sign(data, padding.PKCS1v15(), hashes.SHA512())
            return encode_string("rsa-sha2-512") + encode_string(signature)
        raise UnsupportedKeyType(f"unsupported private key type {type(key).__name__}")


def as_signer(key: PrivateKey | SshSigner) -> SshSigner:
    """A signer for a `cryptography` private key or an existing signer (e.g. an agent key)."""
    if isinstance(key, PRIVATE_KEY_TYPES):
        return LocalSigner(key)
    if hasattr(key, "sign_ssh_data") and hasattr(key, "public_key_blob"):
        return key
    raise UnsupportedKeyType(f"cannot sign with a {type(key).__name__}")


def verify_ssh_signature(key_blob: bytes, data: bytes, signature_blob: bytes) -> str:
    """Check an SSH signature blob over `data`; returns its algorithm name, raises on failure."""
    key = parse_public_key_blob(key_blob)
    key_type = key_type_of(key_blob)
    try:
        reader = WireReader(signature_blob, "signature")
        algorithm = reader.text("signature algorithm")
        signature = reader.string("signature bytes")
        reader.expect_end()
        if key_type == RSA:
            _verify_rsa(key, algorithm, signature, data)  # type: ignore[arg-type]
            return algorithm
        if algorithm != key_type:
            raise BadSignature(f"signature algorithm {algorithm} does not fit a {key_type} key")
        if key_type == ED25519:
            key.verify(signature, data)  # type: ignore[call-arg, union-attr]
        else:
            inner = WireReader(signature, "ECDSA signature")
            r, s = inner.mpint("r"), inner.mpint("s")
            inner.expect_end()
            key.verify(  # type: ignore[call-arg, union-attr]
                encode_dss_signature(r, s), data, ec.ECDSA(ECDSA_HASHES[key_type]())
            )
    except WireError as error:
        raise ArmorError(str(error)) from None
    except InvalidSignature:
        raise BadSignature(
            "signature does not verify: the signed data or the signature was altered"
        ) from None
    return algorithm


def _verify_rsa(key: rsa.RSAPublicKey, algorithm: str, signature: bytes, data: bytes) -> None:
    if algorithm == "ssh-rsa":
        raise UnsupportedAlgorithm("ssh-rsa signatures use SHA-1 and are refused")
    if algorithm not in RSA_SIGNATURE_HASHES:
        raise BadSignature(f"signature algorithm {algorithm} does not fit an ssh-rsa key")
    modulus_bytes = (key.key_size + 7) // 8
    if len(signature) > modulus_bytes:
        raise BadSignature("RSA signature is longer than the key's modulus")
    # RFC 8332 section 3: some signers drop leading zero bytes; restore them before checking.
    signature = signature.rjust(modulus_bytes, b"\0")
    key.verify(signature, data, padding.PKCS1v15(), RSA_SIGNATURE_HASHES[algorithm]())
