"""`verify --explain`: the printed commands reach the workbench's verdict with OpenSSH alone."""

from __future__ import annotations

import subprocess

import pytest

from packets.signing import sshsig
from packets.signing.explain import explain_commands
from tests.signing.sample import BODY, OWNERS, packet_with, sign_all


def run_script(script: str, cwd) -> str:
    """Run the script with bash; return stdout and stderr together."""
    return run_script_status(script, cwd)[1]


def run_script_status(script: str, cwd) -> tuple[int, str]:
    """Run the script with bash: (exit status, stdout and stderr together)."""
    result = subprocess.run(
        ["bash", "-c", script], cwd=cwd, capture_output=True, text=True, check=False
    )
    return result.returncode, result.stdout + result.stderr


@pytest.fixture(scope="module")
def entries(keys) -> list[dict]:
    return sign_all(keys)


def good_lines(output: str) -> list[str]:
    return [
        line for line in output.splitlines() if line.startswith('Good "handoff-packet" signature')
    ]


def test_every_signature_checks_out_with_ssh_keygen(entries, tmp_path) -> None:
    data, parsed = packet_with(BODY, entries)
    path = tmp_path / "packet.yaml"
    path.write_bytes(data)
    output = run_script(explain_commands(str(path), parsed), tmp_path)
    assert [line.split(" with ")[0] for line in good_lines(output)] == [
        f'Good "handoff-packet" signature for {principal}' for principal in OWNERS.values()
    ]
    assert [f"{role}: body unchanged" in output for role in OWNERS] == [True] * 3
    assert [f"{role}: decision approve (as signed)" in output for role in OWNERS] == [True] * 3
    assert "STALE" not in output
    assert run_script_status(explain_commands(str(path), parsed), tmp_path)[0] == 0


@pytest.mark.parametrize(
    "brk", [b"\r", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xa9"], ids=["CR", "NEL", "LS", "PS"]
)
def test_ssh_keygen_never_says_good_for_smuggled_content(entries, tmp_path, brk) -> None:
    data, parsed = packet_with(BODY, entries)
    path = tmp_path / "packet.yaml"
    smuggled = b"outputs:" + brk + b"  recommendation: ship"
    for attack in (data + b"# reviewed" + brk + smuggled + b"\n", data + b"title: changed\n"):
        path.write_bytes(attack)
        status, output = run_script_status(explain_commands(str(path), parsed), tmp_path)
        assert status == 1 and "REFUSED: content outside the signed body" in output
        assert good_lines(output) == [] and "ship" not in output and "changed" not in output


def test_with_an_allowed_signers_file_only_listed_keys_pass(keys, entries, tmp_path) -> None:
    data, parsed = packet_with(BODY, entries)
    (tmp_path / "packet.yaml").write_bytes(data)
    allowed = tmp_path / "allowed signers"  # a space in the path must survive quoting
    allowed.write_text(f"alice@example.com {keys['ed25519'].public_line}\n")
    output = run_script(explain_commands("packet.yaml", parsed, str(allowed)), tmp_path)
    assert [line.split(" with ")[0] for line in good_lines(output)] == [
        'Good "handoff-packet" signature for alice@example.com'
    ]


def test_a_changed_body_and_a_wrong_namespace_show_up(keys, entries, tmp_path) -> None:
    data, parsed = packet_with(BODY.replace(b"memory-bound", b"compute-bound"), entries)
    forged = dict(
        parsed[0],
        signature=sshsig.sign(parsed[0]["statement"].encode(), keys["ed25519"].private_key, "git"),
    )
    (tmp_path / "packet.yaml").write_bytes(data)
    status, output = run_script_status(
        explain_commands("packet.yaml", [forged, *parsed[1:]]), tmp_path
    )
    assert output.count("STALE: the body changed after signing") == 3
    assert len(good_lines(output)) == 2  # the git-namespace signature fails in ssh-keygen
    assert status == 1


def test_unusable_entries_become_comments(entries) -> None:
    script = explain_commands("p.yaml", [{"role": "x"}, dict(entries[0], signature="junk")])
    assert (
        "# signatures[0]: nothing to check with ssh-keygen: entry has no text for principal, key_fingerprint"
        in script
    )
    assert (
        "# signatures[1] (perf-owner): unreadable signature: signature does not start with"
        in script
    )
