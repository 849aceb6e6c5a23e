"""Signing and verification cost per key type, and a whole 3-owner packet check.

Tells the review screen whether `verify_entries` can run on the UI thread (it should stay in
low milliseconds) and how it compares with one `ssh-keygen -Y verify` process per signature.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from benchmarks.report import argument_parser, write_section
from packets.signing import sshsig
from packets.signing.allowed_signers import parse_allowed_signers
from packets.signing.packet import NAMESPACE, sign_entry, verify_entries
from packets.signing.sshkeys import openssh_public_line, public_key_blob

REPEATS = 200
MESSAGE = b"handoff-packet/1 approval\n" + b"x" * 300


def _median_ms(action, repeats: int = REPEATS) -> float:
    """Median of `repeats` timings of `action()`, in ms."""
    timings = []
    for _ in range(repeats):  # each call is timed on its own to take a median
        start = time.perf_counter()
        action()
        timings.append((time.perf_counter() - start) * 1e3)
    return sorted(timings)[len(timings) // 2]


def _ssh_keygen_verify_ms(key, armored: str) -> float | None:
    """Median wall time of one `ssh-keygen -Y verify` process (includes process start), ms."""
    if shutil.which("ssh-keygen") is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        allowed, signature = Path(folder) / "allowed", Path(folder) / "sig"
        allowed.write_text(f"a@b {openssh_public_line(public_key_blob(key))}\n")
        signature.write_text(armored)
        args = ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "a@b", "-n", NAMESPACE]
        args += ["-s", str(signature)]
        return _median_ms(
            lambda: subprocess.run(args, input=MESSAGE, capture_output=True, check=True), 20
        )


def main() -> None:
    keys = {
        "ed25519": ed25519.Ed25519PrivateKey.generate(),
        "ecdsa-p256": ec.generate_private_key(ec.SECP256R1()),
        "rsa-3072": rsa.generate_private_key(public_exponent=65537, key_size=3072),
    }
    rows = [
        "| key | sign (ms) | verify (ms) | ssh-keygen -Y verify process (ms) |",
        "|---|---|---|---|",
    ]
    for name, key in keys.items():
        armored = sshsig.sign(MESSAGE, key, NAMESPACE)
        sign_ms = _median_ms(lambda key=key: sshsig.sign(MESSAGE, key, NAMESPACE))
        verify_ms = _median_ms(lambda armored=armored: sshsig.verify(MESSAGE, armored, NAMESPACE))
        external = _ssh_keygen_verify_ms(key, armored)
        external_text = f"{external:.2f}" if external is not None else "ssh-keygen missing"
        rows.append(f"| {name} | {sign_ms:.3f} | {verify_ms:.3f} | {external_text} |")

    owners = {"perf-owner": "a@x", "compiler": "b@x", "release": "c@x"}
    body = b"id: PKT-1\n" + b"notes: " + b"y" * 20_000 + b"\n"
    moment = datetime(2025, 1, 1, tzinfo=UTC)
    entries = [
        sign_entry(body, "PKT-1", role, owners[role], "approve", key, moment)
        for role, key in zip(owners, keys.values(), strict=True)
    ]
    trusted = parse_allowed_signers(
        "\n".join(
            f"{owners[role]} {openssh_public_line(public_key_blob(key))}"
            for role, key in zip(owners, keys.values(), strict=True)
        )
    )
    packet_ms = _median_ms(lambda: verify_entries(body, "PKT-1", owners, entries, trusted, moment))
    body_text = "\n".join(rows) + (
        f"\n\nWhole packet (20 kB body, 3 owners: one key of each type, allowed_signers "
        f"checked): verify_entries {packet_ms:.2f} ms (median of {REPEATS})."
    )
    write_section(
        "signing",
        "SSHSIG signing and verification",
        "python -m benchmarks.bench_signing",
        body_text,
    )


def cli(argv: list[str] | None = None) -> None:
    """Run from the command line (no arguments: `--help` says what it measures)."""
    argument_parser("benchmarks.bench_signing", __doc__).parse_args(argv)
    main()


if __name__ == "__main__":
    cli()
