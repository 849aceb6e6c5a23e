"""OpenSSH SSHSIG signatures (openssh-portable PROTOCOL.sshsig), made and checked in Python.

A signature binds a message to a namespace: the key signs
`"SSHSIG" string(namespace) string(reserved="") string(hash_alg) string(H(message))`, and the
armored output carries `"SSHSIG" uint32(1) string(public key) string(namespace)
string(reserved) string(hash_alg) string(signature)` in base64 wrapped at 70 columns. The output
is what `ssh-keygen -Y sign` writes and `ssh-keygen -Y verify` reads.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from packets.signing.ssherrors import (
    ArmorError,
    BadSignature,
    MalformedKey,
    NamespaceMismatch,
    SignatureError,
    UnsupportedAlgorithm,
    UnsupportedKeyType,
    UnsupportedVersion,
)
from packets.signing.sshkeys import (
    PrivateKey,
    PublicKey,
    SshSigner,
    as_signer,
    fingerprint,
    key_type_of,
    parse_public_key_blob,
    verify_ssh_signature,
)
from packets.signing.sshwire import WireError, WireReader, encode_string, encode_uint32

__all__ = [
    "ArmorError",
    "BadSignature",
    "MalformedKey",
    "NamespaceMismatch",
    "SignatureError",
    "SshSignature",
    "UnsupportedAlgorithm",
    "UnsupportedKeyType",
    "UnsupportedVersion",
    "VerifiedSignature",
    "armor",
    "dearmor",
    "sign",
    "signed_data",
    "verify",
]

MAGIC = b"SSHSIG"
VERSION = 1
BEGIN = "-----BEGIN SSH SIGNATURE-----"
END = "-----END SSH SIGNATURE-----"
ARMOR_WIDTH = 70  # ssh-keygen wraps the base64 at 70 columns
HASHES = {"sha256": hashlib.sha256, "sha512": hashlib.sha512}
DEFAULT_HASH = "sha512"  # ssh-keygen's default


@dataclass(frozen=True)
class SshSignature:
    """The fields of an SSHSIG blob, parsed but not yet checked against any message."""

    public_key_blob: bytes
    namespace: str
    hash_algorithm: str
    signature_blob: bytes

    @property
    def fingerprint(self) -> str:
        """`SHA256:...` of the signing key, as `ssh-keygen -l` prints it."""
        return fingerprint(self.public_key_blob)


@dataclass(frozen=True)
class VerifiedSignature:
    """What a good signature proves: this key signed the message in this namespace."""

    public_key: PublicKey
    public_key_blob: bytes
    fingerprint: str
    key_type: str
    namespace: str
    hash_algorithm: str
    signature_algorithm: str


def signed_data(namespace: str, hash_algorithm: str, message: bytes) -> bytes:
    """The bytes the key actually signs: magic, namespace, reserved, hash name, H(message)."""
    digest = HASHES[hash_algorithm](message).digest()
    return (
        MAGIC
        + encode_string(namespace)
        + encode_string(b"")
        + encode_string(hash_algorithm)
        + encode_string(digest)
    )


def _check_namespace(namespace: str) -> None:
    if not namespace or not namespace.isascii() or any(c.isspace() for c in namespace):
        raise ValueError(f"namespace must be non-empty ASCII without spaces, got {namespace!r}")


def sign(
    message: bytes,
    private_key: PrivateKey | SshSigner,
    namespace: str,
    hash_algorithm: str = DEFAULT_HASH,
) -> str:
    """Armored SSHSIG over `message` by a private key or an ssh-agent key (`SshSigner`)."""
    _check_namespace(namespace)
    if hash_algorithm not in HASHES:
        raise UnsupportedAlgorithm(f"hash algorithm {hash_algorithm!r} (use sha256 or sha512)")
    signer = as_signer(private_key)
    key_blob = signer.public_key_blob
    signature_blob = signer.sign_ssh_data(signed_data(namespace, hash_algorithm, message))
    return armor(SshSignature(key_blob, namespace, hash_algorithm, signature_blob))


def armor(signature: SshSignature) -> str:
    """The `-----BEGIN SSH SIGNATURE-----` text of a signature, ending in a newline."""
    blob = (
        MAGIC
        + encode_uint32(VERSION)
        + encode_string(signature.public_key_blob)
        + encode_string(signature.namespace)
        + encode_string(b"")
        + encode_string(signature.hash_algorithm)
        + encode_string(signature.signature_blob)
    )
    text = base64.b64encode(blob).decode()
    lines = [text[i : i + ARMOR_WIDTH] for i in range(0, len(text), ARMOR_WIDTH)]
    return "\n".join([BEGIN, *lines, END]) + "\n"


def dearmor(armored: str) -> SshSignature:
    """Parse armored SSHSIG text into its fields; raises `ArmorError`/`UnsupportedVersion`."""
    text = armored.strip()
    if not text.startswith(BEGIN):
        raise ArmorError(f"signature does not start with {BEGIN}")
    if not text.endswith(END):
        raise ArmorError(f"signature does not end with {END} (truncated?)")
    body = "".join(text[len(BEGIN) : -len(END)].split())
    try:
        blob = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise ArmorError("signature armor is not valid base64") from None
    try:
        reader = WireReader(blob, "SSHSIG blob")
        if reader.raw(len(MAGIC), "magic") != MAGIC:
            raise ArmorError("signature is not an SSHSIG blob (bad magic)")
        version = reader.uint32("version")
        if version != VERSION:
            raise UnsupportedVersion(f"SSHSIG version {version} is not supported (only 1)")
        key_blob = reader.string("public key")
        namespace = reader.text("namespace")
        reader.string("reserved")  # PROTOCOL.sshsig: empty today, ignored by readers
        hash_algorithm = reader.text("hash algorithm")
        signature_blob = reader.string("signature")
        reader.expect_end()
    except WireError as error:
        raise ArmorError(str(error)) from None
    return SshSignature(key_blob, namespace, hash_algorithm, signature_blob)


def verify(message: bytes, armored: str, namespace: str) -> VerifiedSignature:
    """Check an armored SSHSIG over `message` for `namespace`; raises a `SignatureError`.

    This proves only that the embedded key signed the message: whether that key is trusted for
    a principal is the allowed-signers check's job.
    """
    parsed = dearmor(armored)
    if parsed.namespace != namespace:
        raise NamespaceMismatch(
            f"signature is for namespace {parsed.namespace!r}, expected {namespace!r}"
        )
    if parsed.hash_algorithm not in HASHES:
        raise UnsupportedAlgorithm(
            f"hash algorithm {parsed.hash_algorithm!r} is not supported (sha256 or sha512)"
        )
    public_key = parse_public_key_blob(parsed.public_key_blob)
    signed = signed_data(namespace, parsed.hash_algorithm, message)
    algorithm = verify_ssh_signature(parsed.public_key_blob, signed, parsed.signature_blob)
    return VerifiedSignature(
        public_key=public_key,
        public_key_blob=parsed.public_key_blob,
        fingerprint=parsed.fingerprint,
        key_type=key_type_of(parsed.public_key_blob),
        namespace=parsed.namespace,
        hash_algorithm=parsed.hash_algorithm,
        signature_algorithm=algorithm,
    )
