"""Keys and OpenSSH helpers for the signature tests. Keys live only in pytest tmp dirs."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from packets.signing.keyfiles import load_private_key
from packets.signing.sshkeys import PrivateKey

# ssh-keygen -t/-b per key kind; RSA 3072 is ssh-keygen's default size and the slow one to make.
KEY_KINDS = {"ed25519": ["-t", "ed25519"], "ecdsa-p256": ["-t", "ecdsa", "-b", "256"]}
KEY_KINDS["rsa-3072"] = ["-t", "rsa", "-b", "3072"]


@dataclass(frozen=True)
class TestKey:
    """A key pair made by ssh-keygen: the private key file, its .pub, and the loaded key."""

    __test__ = False  # not a test class for pytest
    kind: str
    path: Path
    private_key: PrivateKey

    @property
    def public_line(self) -> str:
        """`keytype base64` from the .pub file."""
        return " ".join(self.path.with_suffix(".pub").read_text().split()[:2])


def run(args: list[str], stdin: bytes = b"", **kwargs) -> subprocess.CompletedProcess[bytes]:
    """Run an OpenSSH tool, capturing output; never raises on a non-zero exit."""
    return subprocess.run(args, input=stdin, capture_output=True, check=False, **kwargs)


def ssh_keygen_generate(path: Path, kind_args: list[str], passphrase: str = "") -> Path:
    """A new key at `path` (and `path`.pub); -a 4 keeps passphrase KDF rounds fast for tests."""
    result = run(
        ["ssh-keygen", "-q", *kind_args, "-N", passphrase, "-a", "4", "-C", "test", "-f", str(path)]
    )
    assert result.returncode == 0, result.stderr
    return path


def ssh_keygen_sign(key: Path, namespace: str, message: bytes, *options: str) -> str:
    """`ssh-keygen -Y sign` over stdin (stdout avoids its overwrite prompt)."""
    result = run(["ssh-keygen", "-Y", "sign", "-f", str(key), "-n", namespace, *options], message)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


def ssh_keygen_verify(
    tmp: Path,
    allowed_line: str,
    principal: str,
    namespace: str,
    message: bytes,
    armored: str,
    *options: str,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`ssh-keygen -Y verify` with a one-line allowed_signers file."""
    allowed, signature = tmp / "allowed_signers", tmp / "message.sig"
    allowed.write_text(allowed_line + "\n")
    signature.write_text(armored)
    args = ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", principal, "-n", namespace]
    return run([*args, "-s", str(signature), *options], message, env=env)


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TestKey]:
    """One unencrypted key of each kind, made once per session (RSA keygen is slow-ish)."""
    folder = tmp_path_factory.mktemp("keys")
    made = {}
    for kind, args in KEY_KINDS.items():
        path = ssh_keygen_generate(folder / kind, args)
        made[kind] = TestKey(kind, path, load_private_key(path))
    return made


@pytest.fixture(params=list(KEY_KINDS))
def key(request: pytest.FixtureRequest, keys: dict[str, TestKey]) -> TestKey:
    """Each key kind in turn."""
    return keys[request.param]
