"""A minimal ssh-agent client (draft-miller-ssh-agent): list keys and ask for signatures.

Lets `workbench sign --agent` sign with a key whose private half stays inside ssh-agent. One
short connection per request over the Unix socket named by SSH_AUTH_SOCK.
"""

from __future__ import annotations

import os
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from packets.signing.ssherrors import AgentError, MalformedKey
from packets.signing.sshkeys import RSA, SUPPORTED_KEY_TYPES, fingerprint, key_type_of
from packets.signing.sshwire import WireError, WireReader, encode_string, encode_uint32

SSH_AGENT_FAILURE = 5
SSH_AGENTC_REQUEST_IDENTITIES = 11
SSH_AGENT_IDENTITIES_ANSWER = 12
SSH_AGENTC_SIGN_REQUEST = 13
SSH_AGENT_SIGN_RESPONSE = 14
SSH_AGENT_RSA_SHA2_512 = 4  # sign-request flag: RSA keys sign with rsa-sha2-512, not SHA-1
MAX_REPLY_BYTES = 256 * 1024  # OpenSSH's agent caps messages at 256 KiB (AGENT_MAX_LEN)
# Seconds to wait for a reply: an agent may hold a request while its user confirms (ssh-add -c).
REPLY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class AgentIdentity:
    """One key the agent holds: its public blob and the comment it was added with."""

    public_key_blob: bytes
    comment: str

    @property
    def fingerprint(self) -> str:
        """`SHA256:...` as `ssh-add -l` prints it."""
        return fingerprint(self.public_key_blob)

    @property
    def key_type(self) -> str:
        """Key type name, e.g. `ssh-ed25519` (`malformed` if the agent sent a broken blob)."""
        try:
            return key_type_of(self.public_key_blob)
        except MalformedKey:
            return "malformed"


def agent_socket_path(environ: Mapping[str, str] | None = None) -> str:
    """The agent socket from SSH_AUTH_SOCK (of `environ`, default the process environment)."""
    path = (os.environ if environ is None else environ).get("SSH_AUTH_SOCK", "")
    if not path:
        raise AgentError("SSH_AUTH_SOCK is not set: start ssh-agent and ssh-add your key")
    return path


def _recv_exact(conn: socket.socket, count: int) -> bytes:
    chunks, remaining = [], count
    while remaining:
        chunk = conn.recv(min(remaining, 65536))
        if not chunk:
            raise AgentError("ssh-agent closed the connection mid-reply")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _request(socket_path: str, message_type: int, payload: bytes) -> tuple[int, bytes]:
    """Send one request; returns (reply type, reply payload)."""
    request = bytes([message_type]) + payload
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(REPLY_TIMEOUT_S)
            conn.connect(socket_path)
            conn.sendall(encode_uint32(len(request)) + request)
            (length,) = struct.unpack(">I", _recv_exact(conn, 4))
            if not 1 <= length <= MAX_REPLY_BYTES:
                raise AgentError(f"ssh-agent sent a reply of {length} bytes; not an agent?")
            reply = _recv_exact(conn, length)
    except OSError as error:
        raise AgentError(f"cannot talk to ssh-agent at {socket_path}: {error}") from None
    return reply[0], reply[1:]


def list_identities(socket_path: str | None = None) -> tuple[AgentIdentity, ...]:
    """Every key the agent holds, in the agent's order."""
    path = socket_path or agent_socket_path()
    kind, payload = _request(path, SSH_AGENTC_REQUEST_IDENTITIES, b"")
    if kind != SSH_AGENT_IDENTITIES_ANSWER:
        raise AgentError(f"ssh-agent refused to list keys (reply type {kind})")
    try:
        reader = WireReader(payload, "agent identities")
        count = reader.uint32("key count")
        # One entry per key; the count comes from the agent, the loop ends at the payload's end.
        identities = tuple(
            AgentIdentity(reader.string("key"), reader.string("comment").decode(errors="replace"))
            for _ in range(count)
        )
        reader.expect_end()
    except WireError as error:
        raise AgentError(f"malformed reply from ssh-agent: {error}") from None
    return identities


@dataclass(frozen=True)
class AgentSigner:
    """An `SshSigner` whose private key stays in ssh-agent."""

    socket_path: str
    public_key_blob: bytes

    def sign_ssh_data(self, data: bytes) -> bytes:
        """The agent's SSH signature blob over `data` (RSA keys asked for rsa-sha2-512)."""
        key_type = key_type_of(self.public_key_blob)
        flags = SSH_AGENT_RSA_SHA2_512 if key_type == RSA else 0
        payload = encode_string(self.public_key_blob) + encode_string(data) + encode_uint32(flags)
        kind, reply = _request(self.socket_path, SSH_AGENTC_SIGN_REQUEST, payload)
        if kind != SSH_AGENT_SIGN_RESPONSE:
            raise AgentError(
                f"ssh-agent refused to sign with {fingerprint(self.public_key_blob)} "
                "(key removed, confirmation denied, or agent locked)"
            )
        try:
            signature = WireReader(reply, "agent signature").string("signature")
            algorithm = WireReader(signature, "agent signature").text("algorithm")
        except WireError as error:
            raise AgentError(f"malformed signature from ssh-agent: {error}") from None
        expected = "rsa-sha2-512" if key_type == RSA else key_type
        if algorithm != expected:
            raise AgentError(f"ssh-agent signed with {algorithm}, expected {expected}")
        return signature


def agent_signer(
    public_key_blob: bytes | None = None, socket_path: str | None = None
) -> AgentSigner:
    """A signer for the agent key with this public blob, or for the agent's only usable key."""
    path = socket_path or agent_socket_path()
    usable = [i for i in list_identities(path) if i.key_type in SUPPORTED_KEY_TYPES]
    if public_key_blob is not None:
        if any(i.public_key_blob == public_key_blob for i in usable):
            return AgentSigner(path, public_key_blob)
        raise AgentError(f"ssh-agent does not hold key {fingerprint(public_key_blob)}: ssh-add it")
    if len(usable) == 1:
        return AgentSigner(path, usable[0].public_key_blob)
    held = ", ".join(f"{i.fingerprint} ({i.comment})" for i in usable) or "none"
    raise AgentError(f"ssh-agent holds {len(usable)} usable keys ({held}): name one with --key")
