"""A sample handoff packet body, its owners, and helpers that sign it with the test keys."""

from __future__ import annotations

from datetime import UTC, datetime

import yaml

from packets.signing.packet import replace_signatures, sign_entry

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
SIGNED_AT = datetime(2025, 6, 1, 11, 0, tzinfo=UTC)
PACKET_ID = "PKT-0042"
OWNERS = {
    "perf-owner": "alice@example.com",
    "compiler": "bob@example.com",
    "release": "carol@example.com",
}
KIND_OF_ROLE = {"perf-owner": "ed25519", "compiler": "ecdsa-p256", "release": "rsa-3072"}
BODY = b"""\
id: PKT-0042
title: Fuse attention epilogue (H100)
owners:
  - {role: perf-owner, principal: alice@example.com}
  - {role: compiler, principal: bob@example.com}
  - {role: release, principal: carol@example.com}
inputs:
  workload:
    signatures: 3
  notes: |
    A block scalar that mentions
    signatures: inside its text.
outputs:
  bottleneck: memory-bound
  recommendation: approve-with-guards
"""


def packet_with(body: bytes, entries: list[dict]) -> tuple[bytes, list[dict]]:
    """The packet file a YAML writer would produce (signatures last), and its parsed entries."""
    signatures = b"signatures:\n" + yaml.safe_dump(entries, sort_keys=False).encode()
    data = replace_signatures(body, signatures)
    return data, yaml.safe_load(data)["signatures"]


def sign_all(keys, body: bytes = BODY, packet_id: str = PACKET_ID) -> list[dict]:
    """One approve entry per owner, each role signing with its own kind of key."""
    return [
        sign_entry(
            body,
            packet_id,
            role,
            principal,
            "approve",
            keys[KIND_OF_ROLE[role]].private_key,
            SIGNED_AT,
        )
        for role, principal in OWNERS.items()
    ]
