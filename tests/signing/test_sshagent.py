"""The ssh-agent client against a real ssh-agent started here, with keys added by ssh-add."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from packets.signing import sshsig
from packets.signing.sshagent import agent_signer, agent_socket_path, list_identities
from packets.signing.ssherrors import AgentError
from packets.signing.sshkeys import public_key_blob
from tests.signing.conftest import run, ssh_keygen_verify

MESSAGE = b"statement to sign\n"


@contextmanager
def running_agent(socket_path: str) -> Iterator[dict[str, str]]:
    """An ssh-agent bound to `socket_path` for the block; yields an env with SSH_AUTH_SOCK."""
    assert len(socket_path) < 100, "Unix socket paths must stay under ~104 bytes"
    process = subprocess.Popen(
        ["ssh-agent", "-D", "-a", socket_path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(500):  # wait for the agent to bind its socket (normally a few ms)
            if os.path.exists(socket_path):
                break
            time.sleep(0.01)
        yield {**os.environ, "SSH_AUTH_SOCK": socket_path}
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def agent(tmp_path_factory, keys) -> Iterator[str]:
    """Socket path of a fresh ssh-agent holding the session's three keys."""
    socket_path = str(tmp_path_factory.mktemp("agent") / "sock")
    with running_agent(socket_path) as env:
        for key in keys.values():
            added = run(["ssh-add", str(key.path)], env=env)
            assert added.returncode == 0, added.stderr
        yield socket_path


def test_identities_match_what_ssh_add_lists(agent, keys) -> None:
    listed = run(["ssh-add", "-l", "-E", "sha256"], env={**os.environ, "SSH_AUTH_SOCK": agent})
    expected = [line.split()[1] for line in listed.stdout.decode().splitlines()]
    identities = list_identities(agent)
    assert [i.fingerprint for i in identities] == expected
    assert {i.public_key_blob for i in identities} == {
        public_key_blob(k.private_key) for k in keys.values()
    }


def test_agent_signatures_verify_with_ssh_keygen(agent, key, tmp_path) -> None:
    signer = agent_signer(public_key_blob(key.private_key), agent)
    armored = sshsig.sign(MESSAGE, signer, "handoff-packet")
    result = ssh_keygen_verify(
        tmp_path,
        f"bob@example.com {key.public_line}",
        "bob@example.com",
        "handoff-packet",
        MESSAGE,
        armored,
    )
    assert result.returncode == 0, result.stderr
    verified = sshsig.verify(MESSAGE, armored, "handoff-packet")
    if key.kind.startswith("rsa"):
        assert verified.signature_algorithm == "rsa-sha2-512"


@pytest.mark.parametrize("kind", ["ed25519", "rsa-3072"])
def test_agent_and_local_key_give_identical_deterministic_signatures(agent, keys, kind) -> None:
    key = keys[kind].private_key
    via_agent = sshsig.sign(MESSAGE, agent_signer(public_key_blob(key), agent), "ns")
    assert via_agent == sshsig.sign(MESSAGE, key, "ns")


def test_socket_comes_from_ssh_auth_sock() -> None:
    assert agent_socket_path({"SSH_AUTH_SOCK": "/run/agent.sock"}) == "/run/agent.sock"
    with pytest.raises(AgentError, match="SSH_AUTH_SOCK is not set"):
        agent_socket_path({})


def test_unreachable_agent_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(AgentError, match="cannot talk to ssh-agent at"):
        list_identities(str(tmp_path / "no-such-socket"))


def test_key_choice_errors(agent) -> None:
    stranger = public_key_blob(ed25519.Ed25519PrivateKey.generate())
    with pytest.raises(AgentError, match=r"does not hold key SHA256:.*ssh-add it"):
        agent_signer(stranger, agent)
    with pytest.raises(AgentError, match=r"holds 3 usable keys .* name one with --key"):
        agent_signer(None, agent)


def test_agent_refusal_after_the_key_is_removed(tmp_path_factory, keys) -> None:
    socket_path = str(tmp_path_factory.mktemp("agent2") / "sock")
    with running_agent(socket_path) as env:
        path = keys["ed25519"].path
        assert run(["ssh-add", str(path)], env=env).returncode == 0
        signer = agent_signer(None, socket_path)  # the only key
        assert run(["ssh-add", "-d", str(path)], env=env).returncode == 0
        with pytest.raises(AgentError, match="refused to sign"):
            signer.sign_ssh_data(b"data")
