"""`workbench verify --reproduce`: re-run the model from the packet's inputs and seeds and check
that every recorded number matches exactly (the model is deterministic, floats round-trip)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from packets.fingerprint import inputs_sha256
from triage.review.matrix import MatrixSpec, run_matrix
from triage.review.proposal import classify, propose

if TYPE_CHECKING:
    from packets.load import LoadedPacket


def _compare(label: str, recorded: dict, fresh: dict, out: list[str]) -> None:
    for key in sorted(set(recorded) | set(fresh)):
        a, b = recorded.get(key), fresh.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            _compare(f"{label}.{key}", a, b, out)
        elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                if isinstance(x, dict) and isinstance(y, dict):
                    _compare(f"{label}.{key}[{i}]", x, y, out)
                elif x != y:
                    out.append(f"{label}.{key}[{i}]: recorded {x!r}, reproduced {y!r}")
        elif a != b:
            out.append(f"{label}.{key}: recorded {a!r}, reproduced {b!r}")


def reproduce(loaded: LoadedPacket, path: str) -> list[str]:
    """Mismatches between recorded outputs and a fresh run (empty: reproduced exactly)."""
    packet = loaded.packet
    out = packet.outputs
    problems: list[str] = []
    digest = inputs_sha256(packet)
    for name in ("classification", "mitigation", "validation_matrix", "release"):
        section = getattr(out, name)
        if section is not None and section.inputs_sha256 != digest:
            problems.append(f"{name}: computed from other inputs than the packet's")
    if out.classification is not None:
        fresh = classify(loaded, shlex.split(out.classification.slice.command)[2])
        keep = {"primary", "secondary", "tail", "slice"}
        _compare("classification", out.classification.model_dump(include=keep),
                 fresh.model_dump(include=keep), problems)  # fmt: skip
    if out.mitigation is not None:
        m = out.mitigation
        fresh = propose(loaded, shlex.split(m.slice.command)[2], m.candidate, m.rationale,
                        m.trade_offs, m.primary_metric)  # fmt: skip
        keep = {"baseline", "chosen", "rejected", "knobs", "slice", "broad_tuning_bundle"}
        _compare("mitigation", m.model_dump(include=keep), fresh.model_dump(include=keep), problems)
    if out.validation_matrix is not None:
        v = out.validation_matrix
        spec = MatrixSpec(tuple(v.load_factors), len(v.seeds), v.requests)
        fresh = run_matrix(loaded, v.candidate, spec)
        _compare("validation_matrix", v.model_dump(exclude={"inputs_sha256"}),
                 fresh.model_dump(exclude={"inputs_sha256"}), problems)  # fmt: skip
    return problems
