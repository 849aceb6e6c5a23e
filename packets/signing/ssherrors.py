"""Exception types of the signature layer; each carries a one-line reason fit to show a user.

Catch `SignatureError` for any reason a signature does not verify, `KeyLoadError` for a key
file that cannot be used, `AgentError` for ssh-agent trouble.
"""

from __future__ import annotations


class SignatureError(ValueError):
    """A signature is unusable or does not verify; str(error) is the one-line reason."""


class ArmorError(SignatureError):
    """The armored text or the SSHSIG blob inside it is malformed or truncated."""


class UnsupportedVersion(SignatureError):
    """The SSHSIG blob has a version other than 1."""


class NamespaceMismatch(SignatureError):
    """The signature was made for another namespace than the one expected."""


class UnsupportedKeyType(SignatureError):
    """The key type is not Ed25519, ECDSA nistp256/384/521 or RSA (>= 2048 bits)."""


class UnsupportedAlgorithm(SignatureError):
    """The hash or signature algorithm is refused (e.g. ssh-rsa with SHA-1, or md5)."""


class BadSignature(SignatureError):
    """The cryptographic check failed: the message, signature or key differs from what was signed."""


class KeyLoadError(ValueError):
    """A private or public key file cannot be used; the message names the file and why."""


class AgentError(ValueError):
    """ssh-agent is unreachable, holds no matching key, or refused to sign."""


class MalformedKey(SignatureError):
    """A public key blob or line does not parse as the key type it names."""
