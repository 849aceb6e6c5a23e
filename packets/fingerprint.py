"""The fingerprint of a packet's inputs: what its outputs are computed from.

A review output (proposal, matrix, release) records the fingerprint of the inputs it was
computed from; a change to the topic, seed, inputs, baseline or candidates makes it stale.
Owners and outputs are not part of it. Pure packet-format code (no model), so the app can key
its results on it without loading the model on the UI thread.
"""

from __future__ import annotations

import hashlib
import json

from packets.schema import Packet


def inputs_sha256(packet: Packet) -> str:
    """Fingerprint of everything the outputs are computed from (not owners, not outputs)."""
    data = packet.model_dump(mode="json")
    basis = {k: data[k] for k in ("topic", "seed", "inputs", "baseline", "candidates")}
    for candidate in basis[
        "candidates"
    ]:  # absent provenance leaves older fingerprints as they were
        if candidate.get("provenance") is None:
            candidate.pop("provenance", None)
    text = json.dumps(basis, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
