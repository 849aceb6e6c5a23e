"""Concurrent writers of one packet never lose each other's work (issue 10, item 5).

Two `workbench sign` runs on one file at once both printed "signed as ..." and exited 0 while
one approval was gone. Here real processes run the real command line on one file: each imports
the workbench and loads the packet first (so start-up time does not spread them out), waits at
a barrier on its stdin, then all run at once. Whatever the interleaving, a writer that exits 0
must find its change in the final file; a writer that loses must exit non-zero with a reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from packets.examples import DEFAULT_EXAMPLE, example_bytes
from packets.load import load_packet
from packets.signoff import verify_packet

ROUNDS = 3
TIMEOUT_S = 120
SIGNERS = {  # role -> key file name
    "ml-compiler-engineer": "a",
    "kernel-performance-owner": "b",
    "runtime-systems-engineer": "c",
}
CHILD = """
import sys
from packets.load import load_packet
from workbench.cli import main

load_packet(sys.argv[2])  # (COMMAND PACKET ...) imports and warms everything a write needs
print("ready", flush=True)
sys.stdin.read(1)
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("keys")
    for name in SIGNERS.values():
        made = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t", "-f", str(folder / name)],
            capture_output=True, check=False,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
    return folder


def _at_once(cwd: Path, commands: list[list[str]]) -> list[tuple[int, str]]:
    """Run `workbench ARGS...` for each command, released together; (exit code, output) each."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, *argv],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for argv in commands
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go")
            proc.stdin.close()
        return [(proc.wait(TIMEOUT_S), proc.stdout.read()) for proc in procs]  # type: ignore[union-attr]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _sign(packet: Path, keys: Path, role: str) -> list[str]:
    return [str(packet), "--role", role, "--key", str(keys / SIGNERS[role]), "--decision", "reject"]


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_concurrent_signers_keep_every_approval(tmp_path: Path, keys: Path, round_: int) -> None:
    packet = tmp_path / "p.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    results = _at_once(tmp_path, [["sign", *_sign(packet, keys, role)] for role in SIGNERS])
    report = verify_packet(load_packet(packet))
    status = {r.role: r.status for r in report.roles}
    for role, (code, output) in zip(SIGNERS, results, strict=True):
        assert code == 0, output  # the body did not change: every signer must get through
        assert f"signed as {role}" in output
        assert status[role] == "valid", (role, status)
    assert report.ok


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_a_signer_and_an_artifact_writer_never_drop_each_other(
    tmp_path: Path, keys: Path, round_: int
) -> None:
    """Recording an artifact changes the body: a signature taken before it stays (stale, as any
    edit makes it), one attempted after it is refused; the artifact is never reverted."""
    packet = tmp_path / "p.yaml"
    packet.write_bytes(example_bytes(DEFAULT_EXAMPLE))
    roles = list(SIGNERS)[:2]
    artifact = ["artifact", str(packet), "--role", "runtime-systems-engineer", "--ref", "memo.md"]
    commands = [["sign", *_sign(packet, keys, role)] for role in roles] + [artifact]
    results = _at_once(tmp_path, commands)
    final = load_packet(packet)
    signed = {entry.role for entry in final.packet.signatures}
    for role, (code, output) in zip(roles, results[:-1], strict=True):
        if code == 0:
            assert role in signed, output
        else:
            assert code == 2 and "changed on disk while signing" in output, output
    code, output = results[-1]
    assert code == 0, output
    owner = next(o for o in final.packet.owners if o.role == "runtime-systems-engineer")
    assert owner.artifact is not None and owner.artifact.ref == "memo.md"
