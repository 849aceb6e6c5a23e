"""`workbench sign` / `verify` end to end: three key types, ssh-keygen agrees, edits go stale.

The example packet has no outputs yet, so review guards block approvals: these tests sign
rejections (always allowed); tests/review/test_flow.py signs approvals of a complete packet."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_bytes
from workbench.cli import main

from .conftest import TestKey, ssh_keygen_generate

REJECT = ("--decision", "reject")
OWNERS = {
    "ml-compiler-engineer": "ada.park@example.com",
    "kernel-performance-owner": "kenji.sato@example.com",
    "runtime-systems-engineer": "rosa.diaz@example.com",
}


@pytest.fixture
def signed(tmp_path: Path, keys: dict[str, TestKey]) -> tuple[Path, Path]:
    """The default example signed by its three owners: ed25519, ecdsa, encrypted rsa."""
    packet = tmp_path / "p.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    rsa = ssh_keygen_generate(tmp_path / "rsa-enc", ["-t", "rsa", "-b", "3072"], "s3cret pass")
    (tmp_path / "pass").write_text("s3cret pass\n")
    roles = list(OWNERS)
    assert (
        main(["sign", str(packet), "--role", roles[0], "--key", str(keys["ed25519"].path), *REJECT])
        == 0
    )
    assert (
        main(
            [
                "sign",
                str(packet),
                "--role",
                roles[1],
                "--key",
                str(keys["ecdsa-p256"].path),
                *REJECT,
            ]
        )
        == 0
    )
    assert (
        main(["sign", str(packet), "--role", roles[2], "--key", str(rsa),
              "--passphrase-file", str(tmp_path / "pass"), *REJECT])
        == 0
    )  # fmt: skip
    lines = [
        f"{OWNERS[roles[0]]} {keys['ed25519'].public_line}",
        f"{OWNERS[roles[1]]} {keys['ecdsa-p256'].public_line}",
        f"{OWNERS[roles[2]]} {' '.join(rsa.with_suffix('.pub').read_text().split()[:2])}",
    ]
    allowed = tmp_path / "allowed_signers"
    allowed.write_text("\n".join(lines) + "\n")
    return packet, allowed


def test_three_owners_sign_and_verify(
    signed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    packet, allowed = signed
    assert main(["check", str(packet)]) == 0
    body = packet.read_bytes().split(b"\nsignatures:")[0]
    assert body == example_bytes(DEFAULT_EXAMPLE).rstrip(b"\n")  # comments and bytes kept
    capsys.readouterr()
    # Every signature is valid, but every owner rejected: the packet does not verify.
    assert main(["verify", str(packet), "--allowed-signers", str(allowed)]) == 1
    out = capsys.readouterr().out
    assert out.count(" valid ") == 3 and out.count(" reject ") == 3
    assert out.splitlines()[-1].startswith("NOT verified: ") and out.count(" rejected") == 3
    args = ["verify", str(packet), "--allowed-signers", str(allowed), "--signatures-only"]
    assert main(args) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "verified (signatures only)"


def test_ssh_keygen_verifies_what_the_workbench_signed(
    signed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    packet, allowed = signed
    capsys.readouterr()
    assert main(["verify", str(packet), "--allowed-signers", str(allowed), "--explain"]) == 0
    script = tmp_path / "explain.sh"
    script.write_text(capsys.readouterr().out)
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count('Good "handoff-packet" signature') == 3


def test_an_edit_after_signing_makes_every_signature_stale(
    signed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    packet, allowed = signed
    packet.write_bytes(packet.read_bytes().replace(b"max_batch: 8", b"max_batch: 9", 1))
    capsys.readouterr()
    assert main(["verify", str(packet), "--allowed-signers", str(allowed)]) == 1
    out = capsys.readouterr().out
    assert out.count(" stale ") == 3 and "NOT verified" in out


def test_a_key_not_allowed_for_the_principal_fails(
    signed: tuple[Path, Path], keys: dict[str, TestKey], capsys: pytest.CaptureFixture[str]
) -> None:
    packet, allowed = signed
    # Swap two owners' keys in allowed_signers: each signature is now by a key not allowed.
    lines = allowed.read_text().splitlines()
    a, b = lines[0].split(" ", 1), lines[1].split(" ", 1)
    allowed.write_text(f"{a[0]} {b[1]}\n{b[0]} {a[1]}\n{lines[2]}\n")
    capsys.readouterr()
    assert main(["verify", str(packet), "--allowed-signers", str(allowed)]) == 1
    rows = capsys.readouterr().out.splitlines()[:3]
    assert [row.split()[1] for row in rows] == ["not-allowed", "not-allowed", "valid"]


def test_signing_refuses_a_principal_that_does_not_hold_the_role(
    tmp_path: Path, keys: dict[str, TestKey], capsys: pytest.CaptureFixture[str]
) -> None:
    packet = tmp_path / "p.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    args = [
        "sign",
        str(packet),
        "--role",
        "ml-compiler-engineer",
        "--key",
        str(keys["ed25519"].path),
        *REJECT,
    ]
    assert main([*args, "--principal", "mallory@example.com"]) == 2
    assert "does not hold role" in capsys.readouterr().err
    assert packet.read_bytes() == example_bytes(DEFAULT_EXAMPLE)  # nothing half-written
    assert main(["verify", str(packet)]) == 1
    assert "missing" in capsys.readouterr().out


def test_approving_is_refused_while_review_guards_block(
    tmp_path: Path, keys: dict[str, TestKey], capsys: pytest.CaptureFixture[str]
) -> None:
    packet = tmp_path / "p.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    args = [
        "sign",
        str(packet),
        "--role",
        "ml-compiler-engineer",
        "--key",
        str(keys["ed25519"].path),
    ]
    assert main(args) == 2
    assert "review guards block" in capsys.readouterr().err
    assert packet.read_bytes() == example_bytes(DEFAULT_EXAMPLE)
